# check on a net whose shapes are all fixed: FLOPs and memory per batch, not per example
$PR check $ROOT/test/cli/data/fixed.pbtxt

# check prints each variable's kind, dtype and shape, parameters, FLOPs, memory
$PR check $ROOT/test/cli/data/tiny.pbtxt

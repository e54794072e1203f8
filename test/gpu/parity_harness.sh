# The parity harness itself, without a GPU: its comparison rule catches what
# it must (a 1e-3 relative error in a tensor of small values, which the old
# rule 1e-5 * max(1, |c|) let through; a near-zero element off by 1e-4 in a
# tensor of scale 1; NaN; integers off by one) and passes float32 rounding
# noise; and the CPU in float32 against the CPU in float64 (the error one
# float32 run makes) stays within the tolerance on every net parity_ops.sh
# runs, four steps and an evaluation, at batches 8 and 37 and the large nets.
set -e
"$BUILD/test/gpu_parity" --self-test
# every shipped net and the cover nets: each op of each has a GPU kernel
nets="$ROOT/netdescs/*.pbtxt $ROOT/test/gpu/nets/*.pbtxt"
# shellcheck disable=SC2086
"$BUILD/test/gpu_parity" --reference-f64 --no-coverage --batch 8 $nets
# shellcheck disable=SC2086
"$BUILD/test/gpu_parity" --reference-f64 --no-coverage --batch 37 --seed 11 $nets
"$BUILD/test/gpu_parity" --reference-f64 --no-coverage --batch 8 "$ROOT/test/gpu/nets/large/conv_chunks.pbtxt"
"$BUILD/test/gpu_parity" --reference-f64 --no-coverage --batch 140000 --steps 3 "$ROOT/test/gpu/nets/large/rows.pbtxt"

# The float kernels written for AVX-512 (lib/cpu/gemv.c; conv2d's direct,
# packed and row-copy paths; the recurrent ops' 4 x 32 tile) fall back on
# a CPU without it (gemv.c and the recurrent ops to their AVX2 kernels, the
# others to the portable ones). On a machine that has
# it, PADDLE_RUN_AVX512=off makes pd_cpu_avx512f say no: the unit tests of
# the ops and products that have such paths run again on the fallbacks.
set -u
fail() { echo "FAIL: $*"; exit 1; }
if ! grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  echo "skipped: no AVX-512 here, so the other unit tests ran the fallbacks already"
  exit 77
fi
for t in test_op_conv2d test_op_fc test_parallel test_rnn_pack; do
  out=$(PADDLE_RUN_AVX512=off "$BUILD/test/$t" 2>&1) || fail "$t with PADDLE_RUN_AVX512=off:
$out"
  echo "$t with PADDLE_RUN_AVX512=off: $(echo "$out" | grep -E 'PASSED' | tr -s ' ')"
done

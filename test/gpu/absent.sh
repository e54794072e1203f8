# The skip path of the GPU tests themselves: where gpu_env skips, it says
# "skipped: no GPU" as its last line and exits 77; where a GPU is, it does
# not skip (and this test passes by running to the end).
out=$(sh -c '. "$ROOT/test/gpu/gpu_env"; echo "did not skip"' 2>&1)
rc=$?
if [ $rc -eq 77 ]; then
  [ "$(printf '%s\n' "$out" | tail -n 1)" = "skipped: no GPU" ] || { echo "bad skip line: $out"; exit 1; }
  echo "skips as it should: $(printf '%s\n' "$out" | head -n 1)"
  exit 0
fi
[ $rc -eq 0 ] && [ "$out" = "did not skip" ] || { echo "gpu_env: exit $rc: $out"; exit 1; }
echo "a GPU is here; the GPU tests run"

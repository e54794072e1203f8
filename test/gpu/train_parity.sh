# 200 steps of fashion_mlp on the GPU log the same loss curve as on the CPU
# (relative 1e-4 at every logged step), with and without the CUDA graph; the
# graph run is bit-identical to the eager GPU run.
. "$ROOT/test/gpu/gpu_env"
set -e
run() { "$PR" train "$ROOT/netdescs/fashion_mlp.pbtxt" --iterations 200 --log-every 10 --seed 3 "$@"; }
run --device cpu --log cpu.jsonl 2>cpu.err
run --device gpu --log gpu.jsonl 2>gpu.err
run --device gpu --no-cuda-graph --log eager.jsonl 2>eager.err
grep -q 'CUDA graph captured 1,' gpu.err || { cat gpu.err; echo "the GPU run did not capture a graph"; exit 1; }
"$PYTHON" - <<'PY'
import json, sys
def curve(p):
    return [json.loads(l) for l in open(p) if '"type":"step"' in l]
c, g, e = curve("cpu.jsonl"), curve("gpu.jsonl"), curve("eager.jsonl")
assert len(c) == len(g) == len(e) == 20, (len(c), len(g), len(e))
worst = 0
for a, b, x in zip(c, g, e):
    for k in a:
        if k in ("avg_loss", "acc"):
            d = abs(a[k] - b[k]) / max(abs(a[k]), 1e-12)
            worst = max(worst, d)
            assert d <= 1e-4, (a["step"], k, a[k], b[k], d)
            assert b[k] == x[k], ("graph and eager differ", a["step"], k, b[k], x[k])
    assert b["gpu_mem_peak_bytes"] > 0
print("loss curves agree; largest relative difference %.3g" % worst)
PY

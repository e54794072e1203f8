# fashion_mlp trained on the GPU against the CPU. Training with momentum
# at lr 0.05 is chaotic: two CPU runs that differ only in --threads (the
# order of the sums in a product) agree to 1e-7 for 40 steps at batch 256,
# then drift apart tenfold every 5-10 steps, to 1.5% in the loss and 25-124
# of 10,000 test images after an epoch. So:
# - 40 steps, logged every 5: the loss within 1e-4 relative of the CPU's
#   and the accuracy within 3 of the 1,280 examples at every logged step;
# - one epoch (235 steps, the last a short batch of 96 rows, then the
#   evaluation over the 10,000 test images) with a CUDA graph (captured and
#   replayed), bit-identical to --no-cuda-graph at every logged step and in
#   the evaluation, and near the CPU's (loss within 5%, evaluation accuracy
#   within 300 images): the same training, not the same trajectory;
# - --tf32 over the epoch likewise near the float32 run and not
#   bit-identical to it (so the flag reaches cuBLAS);
# - `infer` on the GPU with the CPU run's parameters over the test set: the
#   CPU's probabilities within 1e-5 (+ 1e-5 of the largest), and the
#   predicted class differs on at most 3 images, the accuracy by at most 3;
# - `time` on the GPU prints the net's forward and backward ops.
. "$ROOT/test/gpu/gpu_env"
set -e
net="$ROOT/netdescs/fashion_mlp.pbtxt"
short() { "$PR" train "$net" --iterations 40 --batch-size 256 --log-every 5 --seed 3 "$@"; }
short --device cpu --log short_cpu.jsonl 2>short_cpu.err
short --device gpu --log short_gpu.jsonl 2>short_gpu.err
run() { "$PR" train "$net" --epochs 1 --batch-size 256 --log-every 47 --seed 3 "$@"; }
run --device cpu --log cpu.jsonl --save cpu_params 2>cpu.err
run --device gpu --log gpu.jsonl 2>gpu.err
run --device gpu --no-cuda-graph --log eager.jsonl 2>eager.err
run --device gpu --tf32 --log tf32.jsonl 2>tf32.err
grep -q 'CUDA graph captured 1,' gpu.err || { cat gpu.err; echo "the GPU run did not capture a graph"; exit 1; }
grep -q 'CUDA graph captured 0,' eager.err || { cat eager.err; echo "--no-cuda-graph captured a graph"; exit 1; }
"$PYTHON" - <<'PY'
import json
def recs(p):
    return [json.loads(l) for l in open(p)]
def steps(p):
    return [r for r in recs(p) if r["type"] == "step"]
def end(p):
    return [r for r in recs(p) if r["type"] == "end"][-1]
sc, sg = steps("short_cpu.jsonl"), steps("short_gpu.jsonl")
assert len(sc) == len(sg) == 8, (len(sc), len(sg))
worst = 0
for a, b in zip(sc, sg):
    d = abs(a["avg_loss"] - b["avg_loss"]) / abs(a["avg_loss"])
    worst = max(worst, d)
    assert d <= 1e-4, ("loss", a["step"], a["avg_loss"], b["avg_loss"], d)
    assert abs(a["acc"] - b["acc"]) * 5 * 256 <= 3.5, ("accuracy", a["step"], a["acc"], b["acc"])
    assert b["gpu_mem_peak_bytes"] > 0
print("40 steps: loss within %.3g relative, accuracy within 3 examples" % worst)
c, g, e, t = (steps(p) for p in ("cpu.jsonl", "gpu.jsonl", "eager.jsonl", "tf32.jsonl"))
assert len(c) == len(g) == len(e) == len(t) == 5, (len(c), len(g), len(e), len(t))
assert c[-1]["step"] == g[-1]["step"] == 235, (c[-1]["step"], g[-1]["step"])
ec, eg, ee, et = (end(p) for p in ("cpu.jsonl", "gpu.jsonl", "eager.jsonl", "tf32.jsonl"))
for a, b, x, y in zip(c, g, e, t):
    assert b["avg_loss"] == x["avg_loss"] and b["acc"] == x["acc"], ("graph and eager differ", a["step"], b, x)
    for ref, r, what in ((a, b, "GPU"), (b, y, "--tf32")):
        d = abs(ref["avg_loss"] - r["avg_loss"]) / ref["avg_loss"]
        assert d <= 0.05, (what, "loss", a["step"], ref["avg_loss"], r["avg_loss"])
assert (eg["eval_avg_loss"], eg["eval_acc"]) == (ee["eval_avg_loss"], ee["eval_acc"]), ("graph and eager evaluations differ", eg, ee)
for ref, r, what in ((ec, eg, "GPU"), (eg, et, "--tf32")):
    assert abs(ref["eval_acc"] - r["eval_acc"]) * 10000 <= 300, (what, "evaluation accuracy", ref["eval_acc"], r["eval_acc"])
    assert abs(ref["eval_avg_loss"] - r["eval_avg_loss"]) / ref["eval_avg_loss"] <= 0.1, (what, "evaluation loss", ref["eval_avg_loss"], r["eval_avg_loss"])
assert any(a["avg_loss"] != b["avg_loss"] for a, b in zip(g, t)), "--tf32 gave the float32 run's losses bit for bit: TF32 did not reach cuBLAS"
print("an epoch: evaluation accuracy GPU %.4f, CPU %.4f, --tf32 %.4f; the graph run equals the eager one" % (eg["eval_acc"], ec["eval_acc"], et["eval_acc"]))
PY
# infer on the GPU with the CPU's parameters
images=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
"$PR" infer "$net" --params cpu_params --data pixels=$images --fetch prob=cpu_prob.npy --device cpu
"$PR" infer "$net" --params cpu_params --data pixels=$images --fetch prob=gpu_prob.npy --device gpu
"$PYTHON" - <<'PY'
import numpy as np
c, g = np.load("cpu_prob.npy"), np.load("gpu_prob.npy")
assert c.shape == g.shape == (10000, 10), (c.shape, g.shape)
assert np.isfinite(g).all()
d = np.abs(c - g)
allow = 1e-5 * np.abs(c).max() + 1e-5 * np.abs(c)
i = np.unravel_index(np.argmax(d / allow), d.shape)
assert (d <= allow).all(), ("infer", i, c[i], g[i])
import gzip
labels = np.frombuffer(gzip.open("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz").read()[8:], np.uint8)
pc, pg = c.argmax(1), g.argmax(1)
flips = int((pc != pg).sum())
assert flips <= 3, ("infer: predicted classes differ on", flips, "images")
ac, ag = int((pc == labels).sum()), int((pg == labels).sum())
assert abs(ac - ag) <= 3, ("infer: accuracy", ac, ag)
print("infer: GPU probabilities agree (worst element %s: %.9g against %.9g); %d of 10000 right on both, %d predictions differ" % (i, g[i], c[i], ag, flips))
PY
# time on the GPU: rows for the net's forward and backward ops
"$PR" time "$net" --device gpu --iterations 5 >time.txt 2>time.err || { cat time.err; exit 1; }
grep -q ' forward ' time.txt && grep -q ' backward ' time.txt || { cat time.txt; echo "time --device gpu: no forward/backward rows"; exit 1; }
echo "time --device gpu: $(grep -c 'ward ' time.txt) op rows"

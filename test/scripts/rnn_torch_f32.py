# rnn_torch_f32.py — the same recurrent computation in float32 as PyTorch
# runs it (issue 21, point 5): bench/compare_torch.py builds
# netdescs/fashion_lstm_fused.pbtxt and netdescs/char_lm.pbtxt in PyTorch,
# loads the initial values paddle-run's initializer gave (lstm.w/r/b copy
# row for row: the gate order inside is PyTorch's i, f, g, o; the input and
# recurrent biases are lstm.b's halves), feeds the same batches (Fashion-MNIST
# in file order; the char LM's windows, streams and state resets as the
# text binding lays them out) with the same Adam steps (and the char LM's
# clip at global norm 5), and the loss of every one of the first steps must
# agree with `paddle-run train --log-every 1`'s to 1e-5 relative. The char
# LM also as bench/lm_variants.py makes it: a GRU (linear_before_reset 1,
# its float steps on packed R) and two LSTM layers.
import json, os, shutil, subprocess, sys

PR = os.environ["PR"]
ROOT = os.environ["ROOT"]
sys.path.insert(0, os.path.join(ROOT, "bench"))
import lm_variants  # noqa: E402
try:
    import torch  # noqa: F401
    import compare_torch as ct
except ImportError:
    print("PyTorch is not installed (python3-torch): skipped")
    sys.exit(77)
torch.set_num_threads(1)
TOL = 1e-5


def init_params(net, tag):
    """The parameters paddle-run's initializer gives `net` (seed 1), as .npy files without optimizer state."""
    subprocess.run([PR, "train", net, "--iterations", "0", "--save", tag + ".ckpt"], check=True,
                   capture_output=True)
    os.makedirs(tag)
    for f in os.listdir(tag + ".ckpt/latest"):
        if f.endswith(".npy") and "@" not in f:
            shutil.copy(os.path.join(tag + ".ckpt/latest", f), tag)
    return os.path.abspath(tag)


def ours(net, params, steps, extra=()):
    log = "log.jsonl"
    if os.path.exists(log):
        os.remove(log)
    r = subprocess.run([PR, "train", net, "--params", params, "--iterations", str(steps), "--log-every", "1",
                        "--threads", "1", "--log", log, *extra], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [json.loads(l) for l in open(log)]
    return {o["step"]: o["avg_loss"] for o in rows if o.get("avg_loss") is not None}


def check(label, a, b, steps):
    worst = 0.0
    for s in range(1, steps + 1):
        rel = abs(a[s] - b[s]) / abs(b[s])
        worst = max(worst, rel)
        assert rel <= TOL, f"{label}: step {s}: ours {a[s]!r}, PyTorch {b[s]!r}, relative difference {rel:.2e}"
    print(f"{label}: the loss of steps 1-{steps} agrees with PyTorch's, worst relative difference {worst:.1e}")


# fashion_lstm_fused: batches of 64 images in file order, Adam 1e-3
net = os.path.join(ROOT, "netdescs/fashion_lstm_fused.pbtxt")
steps = 12
p = init_params(net, "lstm_init")
a = ours(net, p, steps, ["--no-shuffle"])
px = torch.from_numpy(ct.read_idx(ct.DATA + "train-images-idx3-ubyte.gz").copy())
lb = torch.from_numpy(ct.read_idx(ct.DATA + "train-labels-idx1-ubyte.gz").astype("int64"))
r = ct.run(px, lb, 1, 64, steps, 1, "fashion_lstm", p, shuffle=False)
check("fashion_lstm_fused", a, {o["step"]: o["loss"] for o in r["losses"]}, steps)

# char_lm: windows of 64 bytes of the fortunes, 32 streams carrying the state, Adam 2e-3, clip 5
net = os.path.join(ROOT, "netdescs/char_lm.pbtxt")
steps = 8
p = init_params(net, "lm_init")
a = ours(net, p, steps)
r = ct.run_lm(1, 32, steps, 1, params=p)
check("char_lm", a, {o["step"]: o["loss"] for o in r["losses"]}, steps)
for kind in ("gru", "2layer"):
    vnet = f"char_lm_{kind}.pbtxt"
    with open(vnet, "w") as f:
        f.write(lm_variants.variant_text(open(net).read(), kind))
    p = init_params(vnet, f"lm_{kind}_init")
    a = ours(vnet, p, steps)
    r = ct.run_lm(1, 32, steps, 1, params=p, variant=f"char_lm_{kind}")
    check(f"char_lm ({kind})", a, {o["step"]: o["loss"] for o in r["losses"]}, steps)

# cnn_torch_f32.py — the convolutional nets compute what PyTorch computes
# (issue 24): bench/compare_torch.py builds netdescs/fashion_cnn.pbtxt
# (5x5: F(4x4, 5x5) for the 32-channel layer under --conv-algo auto, and
# again with F(2x2, 5x5) and with im2col forced) and netdescs/fashion_cnn3.pbtxt (3x3: Winograd F(4x4, 3x3)
# under --conv-algo auto for the layers with 32 and 64 input channels, and
# again with F(2x2, 3x3) forced) in PyTorch from the initial values
# paddle-run's initializer gave, feeds the same batches of 64 (Fashion-MNIST
# in file order) and takes the same steps, with the shipped Adam and with
# bench.py's momentum-SGD variant; the loss of each of the first steps must
# agree with `paddle-run train --log-every 1 --threads 1`'s to 1e-5
# relative. dropout_prob is set to 0 on both sides (random masks differ).
# Both nets start with their convolutions' biases at 0.01 (both sides):
# with the initializer's zero biases their pre-activations are exactly 0
# over the blank background, where ReLU's gradient steps, and F(4x4)'s
# rounding (~1e-9 there) opens the gate: the biases' first gradients then
# differ by up to ~25% (bench.py's nudge_conv_biases; fashion_cnn with
# F(4x4, 5x5) and Adam: 5e-5 at step 2); from zero biases only step 1 (the
# forward pass) is checked.
# Skipped (exit 77) without PyTorch or dataset-fashion-mnist.
import json, os, shutil, subprocess, sys

import numpy as np

PR = os.environ["PR"]
ROOT = os.environ["ROOT"]
sys.path.insert(0, os.path.join(ROOT, "bench"))
try:
    import torch  # noqa: F401
    import compare_torch as ct
except ImportError:
    print("PyTorch is not installed (python3-torch): skipped")
    sys.exit(77)
if not os.path.exists(ct.DATA + "train-images-idx3-ubyte.gz"):
    print("dataset-fashion-mnist is not installed: skipped")
    sys.exit(77)
torch.set_num_threads(1)
TOL = 1e-5
STEPS = 5  # Adam's runs drift apart ~x1.5 a step from rounding (bench.py, section 7): a few steps only
ADAM = 'type: "adam" lr: 0.002'


def variants(name):
    """The net with dropout_prob 0 and no evaluation data, with its Adam and with momentum SGD (lr 0.01,
    momentum 0.9, as compare_torch.py's --optimizer momentum)."""
    with open(os.path.join(ROOT, "netdescs", name + ".pbtxt")) as f:
        text = "".join(l for l in f if "eval_data" not in l)
    nodrop = text.replace('key: "dropout_prob" value { f: 0.5 }', 'key: "dropout_prob" value { f: 0.0 }')
    assert nodrop != text and ADAM in nodrop, f"{name}: no dropout_prob 0.5 or no `{ADAM}` to rewrite"
    out = {}
    for opt, t in (("adam", nodrop), ("momentum", nodrop.replace(ADAM, 'type: "momentum" lr: 0.01 momentum: 0.9'))):
        out[opt] = f"{name}_{opt}.pbtxt"
        with open(out[opt], "w") as g:
            g.write(t)
    return out


def init_params(net, tag):
    """The parameters paddle-run's initializer gives `net` (seed 1), as .npy files without optimizer state."""
    subprocess.run([PR, "train", net, "--iterations", "0", "--save", tag + ".ckpt"], check=True,
                   capture_output=True)
    os.makedirs(tag)
    for f in os.listdir(tag + ".ckpt/latest"):
        if f.endswith(".npy") and "@" not in f:
            shutil.copy(os.path.join(tag + ".ckpt/latest", f), tag)
    return os.path.abspath(tag)


def ours(net, params, extra=()):
    log = "log.jsonl"
    if os.path.exists(log):
        os.remove(log)
    r = subprocess.run([PR, "train", net, "--params", params, "--iterations", str(STEPS), "--log-every", "1",
                        "--threads", "1", "--no-shuffle", "--log", log, *extra], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [json.loads(l) for l in open(log)]
    return {o["step"]: o["avg_loss"] for o in rows if o.get("avg_loss") is not None}


def check(label, a, b, steps=STEPS):
    worst = 0.0
    for s in range(1, steps + 1):
        rel = abs(a[s] - b[s]) / abs(b[s])
        worst = max(worst, rel)
        assert rel <= TOL, f"{label}: step {s}: ours {a[s]!r}, PyTorch {b[s]!r}, relative difference {rel:.2e}"
    print(f"{label}: the loss of steps 1-{steps} agrees with PyTorch's, worst relative difference {worst:.1e}")


px = torch.from_numpy(ct.read_idx(ct.DATA + "train-images-idx3-ubyte.gz").copy())
lb = torch.from_numpy(ct.read_idx(ct.DATA + "train-labels-idx1-ubyte.gz").astype("int64"))
NETS = (("fashion_cnn", "cnn", ("auto", "winograd2", "im2col"), ("conv1", "conv2")),
        ("fashion_cnn3", "cnn3", ("auto", "winograd2"), ("c11", "c12", "c21", "c22")))
for name, model, algos, convs in NETS:
    nets = variants(name)
    p = init_params(nets["adam"], model + "_init")
    # the forward pass from the initializer's values, then the biases off ReLU's step
    r = ct.run(px, lb, 1, 64, 2, 1, model, p, shuffle=False, dropout=0.0)
    check(f"{name}, zero biases, --conv-algo auto", ours(nets["adam"], p, ["--conv-algo", "auto"]),
          {o["step"]: o["loss"] for o in r["losses"]}, 1)
    for c in convs:
        np.save(f"{p}/{c}.b.npy", np.full(np.load(f"{p}/{c}.b.npy").shape, 0.01, dtype=np.float32))
    for opt, net in nets.items():
        r = ct.run(px, lb, 1, 64, STEPS, 1, model, p, shuffle=False, dropout=0.0, optimizer=opt)
        theirs = {o["step"]: o["loss"] for o in r["losses"]}
        for algo in algos:
            check(f"{name}, {opt}, --conv-algo {algo}", ours(net, p, ["--conv-algo", algo]), theirs)

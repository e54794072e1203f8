# lr_schedules.py — the multistep and plateau schedules and --eval-every
# against their documented rules (computed here in pure Python) and, where
# python3-torch is installed, against torch.optim.lr_scheduler's MultiStepLR
# and ReduceLROnPlateau fed the same evaluation losses: the lr logged at
# every step must agree. A plateau run resumed from a checkpoint logs the
# same lrs and ends with the same parameters as a straight one (its state is
# in the checkpoint); an evaluation every few steps in the middle of a text
# run leaves the training streams' carried state as it was (the parameters
# equal those of a run without it).
import glob, json, os, subprocess
import numpy as np

PR = os.environ["PR"]
try:
    import torch
except ImportError:
    torch = None

rng = np.random.default_rng(7)
N, D, C = 96, 5, 3
y = rng.integers(0, C, size=N)
x = (rng.normal(size=(C, D))[y] * 0.7 + rng.normal(size=(N, D))).astype(np.float32)
np.save("x.npy", x[:64]); np.save("y.npy", y[:64].astype(np.int64))
np.save("ex.npy", x[64:]); np.save("ey.npy", y[64:].astype(np.int64))
NET = """
name: "sched"
var { name: "x" shape: [-1, 5] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 8 } } attrs { key: "act" value { s: "tanh" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 8 seed: 3 log_every: 1
        optimizer { type: "momentum" lr: %(lr)s schedule { %(sched)s } }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" }
        eval_data { var: "x" file: "ex.npy" } eval_data { var: "y" file: "ey.npy" } }
"""


def run(*args, ok=True):
    r = subprocess.run([PR, *args], capture_output=True, text=True, timeout=120)
    assert (r.returncode == 0) == ok, (args, r.returncode, r.stdout + r.stderr)
    return r.stdout + r.stderr


def log(path):
    return [json.loads(l) for l in open(path)]


def params(d):
    ck = os.path.realpath(os.path.join(d, "latest"))
    return {os.path.basename(f): open(f, "rb").read() for f in sorted(glob.glob(ck + "/*.npy")) if "@" not in f}


def close(a, b):
    return all(abs(p - q) <= 1e-8 * abs(q) for p, q in zip(a, b)) and len(a) == len(b)


# ---- multistep: lr x gamma at each boundary (0-based update count)
open("ms.pbtxt", "w").write(NET % dict(lr=0.1, sched='type: "multistep" boundaries: [3, 7, 8] gamma: 0.5'))
run("train", "ms.pbtxt", "--iterations", "12", "--log", "ms.jsonl")
lrs = [r["lr"] for r in log("ms.jsonl") if r["type"] == "step"]
want = [0.1 * 0.5 ** sum(k >= b for b in [3, 7, 8]) for k in range(12)]
assert close(lrs, want), (lrs, want)
if torch:
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    sch = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[3, 7, 8], gamma=0.5)
    tl = []
    for _ in range(12):
        tl.append(opt.param_groups[0]["lr"])
        opt.step(); sch.step()
    assert close(lrs, tl), (lrs, tl)
print("multistep:", lrs)

# ---- plateau: evaluated after every step (--eval-every 1), 8 steps an epoch
PL = 'type: "plateau" factor: 0.5 patience: 1 threshold: 0.02 min_lr: 0.01'
open("pl.pbtxt", "w").write(NET % dict(lr=0.9, sched=PL))
run("train", "pl.pbtxt", "--iterations", "30", "--eval-every", "1", "--log", "pl.jsonl", "--save", "a")
L = log("pl.jsonl")
lrs = [r["lr"] for r in L if r["type"] == "step"]
# every step's evaluation: an "eval" record, or at an epoch's end the epoch's
evals = sorted((r["step"], r["eval_avg_loss"]) for r in L if r["type"] in ("eval", "epoch"))
assert [s for s, _ in evals] == list(range(1, 31)), evals
losses = [v for _, v in evals]
lr, best, bad, want = 0.9, float("inf"), 0, []
for v in losses:
    want.append(lr)
    if v < best * (1 - 0.02):
        best, bad = v, 0
    else:
        bad += 1
    if bad > 1:
        new = max(lr * 0.5, 0.01)
        if lr - new > 1e-8:
            lr = new
        bad = 0
assert close(lrs, want), (lrs, want)
assert len(set(want)) >= 3, ("the plateau schedule never lowered the lr twice; losses", losses)
if torch:
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.9)
    sch = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1, threshold=0.02,
                                                     threshold_mode="rel", min_lr=0.01)
    tl = []
    for v in losses:
        tl.append(opt.param_groups[0]["lr"])
        sch.step(v)
    assert close(lrs, tl), (lrs, tl)
print("plateau:", lrs)

# resumed: the same lrs and parameters as the straight run
run("train", "pl.pbtxt", "--iterations", "13", "--eval-every", "1", "--log", "r.jsonl", "--save", "b")
run("train", "pl.pbtxt", "--iterations", "30", "--eval-every", "1", "--log", "r.jsonl", "--resume", "b", "--save", "b")
rl = [r["lr"] for r in log("r.jsonl") if r["type"] == "step"]
assert rl == lrs, (rl, lrs)
assert params("a") == params("b"), "a resumed plateau run ended with other parameters"
assert "plateau_lr" in open(os.path.realpath("b/latest") + "/manifest.pbtxt").read()

# eval_every in the file, --eval-every 0 overriding it; eval records only mid-epoch
open("ev.pbtxt", "w").write((NET % dict(lr=0.1, sched='type: "constant"')).replace("log_every: 1", "log_every: 1 eval_every: 3"))
run("train", "ev.pbtxt", "--iterations", "12", "--log", "ev.jsonl")
assert [r["step"] for r in log("ev.jsonl") if r["type"] == "eval"] == [3, 6, 9, 12], log("ev.jsonl")
assert [r["step"] for r in log("ev.jsonl") if r["type"] == "epoch"] == [8]
run("train", "ev.pbtxt", "--iterations", "12", "--log", "ev0.jsonl", "--eval-every", "0")
assert not [r for r in log("ev0.jsonl") if r["type"] == "eval"]

# refused: plateau or eval_every without evaluation data
nodata = (NET % dict(lr=0.1, sched=PL)).replace('eval_data { var: "x" file: "ex.npy" } eval_data { var: "y" file: "ey.npy" }', "")
open("nd.pbtxt", "w").write(nodata)
out = run("train", "nd.pbtxt", "--iterations", "2", ok=False)
assert 'schedule "plateau" lowers the lr when the evaluation loss stops improving' in out, out
out = run("train", "ms.pbtxt", "--iterations", "2", "--set", "train.eval_data[x].file=ex.npy", "--eval-every", "2")
open("nd2.pbtxt", "w").write(nodata.replace(PL, 'type: "constant"'))
out = run("train", "nd2.pbtxt", "--iterations", "2", "--eval-every", "1", ok=False)
assert "eval_every 1: there is no evaluation data" in out, out

# ---- a text run evaluated mid-epoch trains as one that is not
A = "".join("aaab" if i % 3 else "abba" for i in range(40))
open("a.txt", "w").write(A)
TEXT = """
name: "charnet"
var { name: "ids" shape: [2, 4] dtype: INT64 }
var { name: "next" shape: [2, 4] dtype: INT64 }
var { name: "keep" shape: [2, 1] }
var { name: "h_carry" shape: [2, 3] kind: STATE init { type: "constant" value: 0 } }
op { type: "cast" inputs: "ids" outputs: "xf" attrs { key: "dtype" value { s: "float32" } } }
op { type: "scale" inputs: "xf" outputs: "xs" attrs { key: "scale" value { f: 0.01 } } }
op { type: "reshape" inputs: "xs" outputs: "x" attrs { key: "shape" value { ints: [0, -1, 1] } } }
op { type: "broadcast_mul" inputs: ["h_carry", "keep"] outputs: "h0" }
block {
  name: "cell"
  var { name: "h_prev" shape: [-1, 3] }
  var { name: "cell.u" shape: [3, 3] kind: PARAM }
  op { type: "fc" inputs: ["x_t", "cell.w", "cell.b"] outputs: "a" attrs { key: "size" value { i: 3 } } }
  op { type: "mul" inputs: ["h_prev", "cell.u"] outputs: "c" }
  op { type: "elementwise_add" inputs: ["a", "c"] outputs: "s" }
  op { type: "tanh" inputs: "s" outputs: "h" }
}
op { type: "recurrent" inputs: ["x", "h0"] outputs: ["hs", "h_carry"]
     attrs { key: "step_block" value { block: "cell" } }
     attrs { key: "inputs" value { strings: "x_t" } }
     attrs { key: "prev_states" value { strings: "h_prev" } }
     attrs { key: "states" value { strings: "h" } }
     attrs { key: "outputs" value { strings: "h" } } }
op { type: "reshape" inputs: "hs" outputs: "hflat" attrs { key: "shape" value { ints: [-1, 3] } } }
op { type: "fc" inputs: ["hflat", "out.w", "out.b"] outputs: "logits" attrs { key: "size" value { i: 256 } } }
op { type: "reshape" inputs: "next" outputs: "label" attrs { key: "shape" value { ints: [-1, 1] } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "label"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 2 log_every: 1000
        optimizer { type: "sgd" lr: 0.5 }
        data { type: "text" var: "ids" target: "next" keep: "keep" file: "a.txt" held_out: 0.25 } }
"""
open("text.pbtxt", "w").write(TEXT)
run("train", "text.pbtxt", "--threads", "1", "--epochs", "2", "--save", "t0")
out = run("train", "text.pbtxt", "--threads", "1", "--epochs", "2", "--save", "t1", "--eval-every", "2")
assert "step 2 (epoch 1): eval_avg_loss" in out, out
assert params("t0") == params("t1"), "a mid-epoch evaluation changed the training of a text run"
print("text run: a mid-epoch evaluation leaves the carried state alone")

# train_small.py — end-to-end training on generated data: the loss falls and
# accuracy rises; the same seed gives bit-identical parameters; 2 epochs
# straight equal 1 epoch + --resume + 1 epoch, byte for byte (and 0 steps,
# --iterations 0, + --resume; iterations: 0 in the file); a seed of 2^64 - 1;
# infer after
# train reproduces the evaluation accuracy; and the bad inputs of training
# (missing binding, label out of range, wrong row shape, unwritable --save)
# give exit 2 with a clear message before training starts.
import glob, json, os, subprocess
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(3)
N, D, C = 600, 6, 3
centers = rng.normal(scale=3.0, size=(C, D))
y = rng.integers(0, C, size=N)
x = (centers[y] + rng.normal(size=(N, D))).astype(np.float32)
np.save("x.npy", x[:500]); np.save("y.npy", y[:500].astype(np.int64))
np.save("ex.npy", x[500:]); np.save("ey.npy", y[500:].astype(np.int64))
NET = """
name: "blobs"
var { name: "x" shape: [-1, 6] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 16 } } attrs { key: "act" value { s: "tanh" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax" inputs: "logits" outputs: "prob" }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
op { type: "accuracy" inputs: ["prob", "y"] outputs: "acc" }
train { loss: "avg_loss" metrics: "acc" batch_size: 32 epochs: 2 seed: 5 log_every: 4
        optimizer { type: "adam" lr: 0.01 }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" }
        eval_data { var: "x" file: "ex.npy" } eval_data { var: "y" file: "ey.npy" } }
"""
open("net.pbtxt", "w").write(NET)

def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr

def params(d):
    ck = os.path.realpath(os.path.join(d, "latest"))
    return {os.path.basename(f): open(f, "rb").read() for f in sorted(glob.glob(ck + "/*.npy"))}

rc, out = run("train", "net.pbtxt", "--save", "a", "--log", "a.jsonl")
assert rc == 0, out
log = [json.loads(l) for l in open("a.jsonl")]
steps = [r for r in log if r["type"] == "step"]
epochs = [r for r in log if r["type"] == "epoch"]
assert len(epochs) == 2 and steps, log
assert steps[-1]["avg_loss"] < 0.5 * steps[0]["avg_loss"], (steps[0], steps[-1])
assert epochs[-1]["eval_acc"] > 0.9, epochs[-1]
print(f"loss {steps[0]['avg_loss']:.3f} -> {steps[-1]['avg_loss']:.3f}, eval acc {epochs[-1]['eval_acc']:.3f}")

# reproducible: same seed, same threads -> identical bytes
rc, out = run("train", "net.pbtxt", "--save", "b")
assert rc == 0, out
pa, pb = params("a"), params("b")
assert pa and pa == pb, "same seed gave different parameters"
# another seed differs
rc, out = run("train", "net.pbtxt", "--save", "c", "--seed", "6")
assert rc == 0 and params("c") != pa

# resume is exact: 1 epoch, then resume for the second
rc, out = run("train", "net.pbtxt", "--save", "r", "--epochs", "1")
assert rc == 0, out
rc, out = run("train", "net.pbtxt", "--save", "r2", "--resume", "r", "--epochs", "2")
assert rc == 0, out
assert params("r2") == pa, "1 epoch + resume + 1 epoch differs from 2 epochs"
# and resuming from the middle of an epoch too
rc, out = run("train", "net.pbtxt", "--save", "m", "--iterations", "21")
assert rc == 0, out
rc, out = run("train", "net.pbtxt", "--save", "m2", "--resume", "m")
assert rc == 0, out
assert params("m2") == pa, "resume mid-epoch differs"
# --iterations 0: no step; --save writes the starting parameters, and training
# resumed from them is the run from scratch, byte for byte
rc, out = run("train", "net.pbtxt", "--save", "z", "--iterations", "0")
assert rc == 0 and "finished: 0 steps" in out, out
assert os.path.basename(os.path.realpath("z/latest")) == "step-00000000", os.path.realpath("z/latest")
rc, out = run("train", "net.pbtxt", "--save", "z2", "--resume", "z")
assert rc == 0, out
assert params("z2") == pa, "0 steps + resume differs from a run from scratch"
# iterations: 0 in the file means what --iterations 0 means: no step
open("zero.pbtxt", "w").write(NET.replace("epochs: 2", "iterations: 0"))
rc, out = run("train", "zero.pbtxt", "--save", "z3")
assert rc == 0 and "finished: 0 steps" in out, out
assert params("z3") == params("z"), "iterations: 0 in the file differs from --iterations 0"
# a seed is any uint64, the largest too (it was refused above 2^63 - 1)
rc, out = run("train", "net.pbtxt", "--save", "s", "--seed", "18446744073709551615", "--iterations", "1")
assert rc == 0, out
manifest = open(os.path.join(os.path.realpath("s/latest"), "manifest.pbtxt")).read()
assert "seed: 18446744073709551615" in manifest, manifest
print("reproducible and resume exact")

# desc --backward --optimizer prints a net that trains as it is, identically
r = subprocess.run([PR, "desc", "net.pbtxt", "--backward", "--optimizer", "adam"], capture_output=True, text=True)
assert r.returncode == 0, r.stderr
assert 'type: "fc_grad"' in r.stdout and 'type: "adam"' in r.stdout and '"w1@GRAD"' in r.stdout
open("expanded.pbtxt", "w").write(r.stdout)
rc, out = run("train", "expanded.pbtxt", "--save", "e")
assert rc == 0, out
assert params("e") == pa, "the expanded net trains differently"
r2 = subprocess.run([PR, "desc", "expanded.pbtxt", "--backward", "--optimizer", "adam"], capture_output=True, text=True)
assert r2.returncode == 0 and r2.stdout == r.stdout, "desc of the expanded net is not a fixed point"
print("desc output trains identically")

# infer after train reproduces the evaluation accuracy
rc, out = run("infer", "net.pbtxt", "--params", "a", "--data", "x=ex.npy", "--fetch", "prob=p.npy")
assert rc == 0, out
acc = float(np.mean(np.argmax(np.load("p.npy"), axis=1) == y[500:]))
assert abs(acc - epochs[-1]["eval_acc"]) < 1e-6, (acc, epochs[-1]["eval_acc"])

# --params (fine-tuning) loads by name and lists what it skipped or missed;
# a partial match is refused unless --allow-partial-params
import shutil
os.makedirs("ft", exist_ok=True)
src = os.path.realpath(os.path.join("a", "latest"))
shutil.copy(os.path.join(src, "w1.npy"), "ft/w1.npy")
np.save("ft/extra.npy", np.zeros(3, np.float32))
rc, out = run("train", "net.pbtxt", "--params", "ft", "--iterations", "1")
assert rc == 2 and "--params ft does not hold this net's parameters (4 listed above" in out, out
rc, out = run("train", "net.pbtxt", "--params", "ft", "--iterations", "1", "--allow-partial-params")
assert rc == 0, out
assert "skipped extra" in out and "missed w2 " in out and "missed w1 " not in out and "MOMENT" not in out, out
rc, out = run("train", "net.pbtxt", "--params", "a", "--iterations", "1")  # a whole checkpoint: no list
assert rc == 0 and "--params" not in out, out
np.save("ft/w1.npy", np.zeros((6, 17), np.float32))
rc, out = run("train", "net.pbtxt", "--params", "ft", "--iterations", "1", "--allow-partial-params")
assert rc == 2 and '"w1" has shape [6, 17], but the net needs [6, 16]' in out, out

# bad inputs of training
open("nobind.pbtxt", "w").write(NET.replace('data { var: "y" file: "y.npy" }', ""))
rc, out = run("train", "nobind.pbtxt")
assert rc == 2 and 'data variable "y"' in out and "has no data" in out, out
bad = y[:500].copy(); bad[7] = 9
np.save("ybad.npy", bad.astype(np.int64))
rc, out = run("train", "net.pbtxt", "--data", "y=ybad.npy", "--no-shuffle")
assert rc == 2 and "label 9" in out and "out of range [0, 3)" in out, out
np.save("xbad.npy", np.zeros((500, 5), np.float32))
rc, out = run("train", "net.pbtxt", "--data", "x=xbad.npy")
assert rc == 2 and "xbad.npy" in out, out
open("afile", "w").write("")
rc, out = run("train", "net.pbtxt", "--save", "afile/sub", "--log", "bad.jsonl")
assert rc == 2 and "afile/sub" in out and not os.path.exists("bad.jsonl"), out
rc, out = run("train", "net.pbtxt", "--lr", "-1")
assert rc == 2 and "--lr must be > 0" in out, out
print("ok")

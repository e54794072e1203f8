# nan_data.py — a NaN in the data is never turned into a plausible number:
# `infer` on a row holding a NaN returns NaN for that row (relu keeps it;
# the other rows are as without it), and shuffled training with
# --no-check-data stops with exit 1 at the first op the NaN reaches, naming
# the data file and the row of the file (through the epoch's shuffle), not
# a constant model and exit 0. A NaN in one row of a float32 file as large
# as Fashion-MNIST's images is found by the scan before training.
import os, re, subprocess
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(5)
x = rng.normal(size=(200, 6)).astype(np.float32)
y = rng.integers(0, 3, size=(200, 1)).astype(np.int64)
np.save("x.npy", x)
np.save("y.npy", y)
xn = x.copy()
xn[137, 4] = np.nan
np.save("xn.npy", xn)
open("net.pbtxt", "w").write("""
name: "nan"
var { name: "x" shape: [-1, 6] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 16 } } attrs { key: "act" value { s: "relu" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax" inputs: "logits" outputs: "prob" }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 16 epochs: 3 seed: 3
        optimizer { type: "momentum" lr: 0.05 }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
""")


def run(*args):
    return subprocess.run([PR, *args], capture_output=True, text=True, timeout=120)


r = run("train", "net.pbtxt", "--save", "ck")
assert r.returncode == 0, r.stderr

# infer: row 137 is NaN, every other row as on the clean data
for batch in ("1", "64"):
    r = run("infer", "net.pbtxt", "--params", "ck", "--data", "x=xn.npy", "--fetch", "prob=pn.npy", "--batch-size", batch)
    assert r.returncode == 0, r.stderr
    r = run("infer", "net.pbtxt", "--params", "ck", "--data", "x=x.npy", "--fetch", "prob=p.npy", "--batch-size", batch)
    assert r.returncode == 0, r.stderr
    pn, p = np.load("pn.npy"), np.load("p.npy")
    assert np.isnan(pn[137]).all(), pn[137]
    rest = np.arange(200) != 137
    assert np.isfinite(pn[rest]).all() and np.array_equal(pn[rest], p[rest])
print("infer: row 137 NaN, the others unchanged")

# training, shuffled, the scan skipped: exit 1 naming fc, x's file and row 137
r = run("train", "net.pbtxt", "--data", "x=xn.npy", "--no-check-data")
assert r.returncode == 1, (r.returncode, r.stderr)
last = r.stderr.strip().splitlines()[-1]
m = re.fullmatch(r'paddle-run: the loss "avg_loss" is nan at step (\d+) \(epoch 1\): op #0 "fc" \(net\.pbtxt:5:1\) '
                 r'wrote nan into "h" at element (\d+); it reads the data "x": xn\.npy row 137 holds nan at element 4 '
                 r'\(row (\d+) of the batch\)', last)
assert m, last
step, elem, brow = map(int, m.groups())
assert elem // 16 == brow, (elem, brow)  # h's first NaN is in the batch row the NaN came from
print(last)

# the scan (default): exit 2 before training
r = run("train", "net.pbtxt", "--data", "x=xn.npy")
assert r.returncode == 2, (r.returncode, r.stderr)
assert r.stderr.strip() == ('paddle-run: xn.npy: row 137 holds nan at element 4; the data for "x" must be finite '
                            '(--no-check-data skips this check)'), r.stderr

# a Fashion-MNIST-sized float32 file (60000 x 784), one NaN in its last row
big = np.zeros((60000, 784), np.float32)
big[59999, 783] = np.nan
np.save("big.npy", big)
np.save("bigy.npy", np.zeros((60000, 1), np.int64))
open("big.pbtxt", "w").write("""
name: "big"
var { name: "x" shape: [-1, 784] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "logits" attrs { key: "size" value { i: 10 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 64 iterations: 1 optimizer { type: "sgd" lr: 0.1 }
        data { var: "x" file: "big.npy" } data { var: "y" file: "bigy.npy" } }
""")
r = run("train", "big.pbtxt")
assert r.returncode == 2 and "big.npy: row 59999 holds nan at element 783" in r.stderr, r.stderr
print("ok")

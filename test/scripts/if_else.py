# if_else.py — the if_else op (a per-row condition splits the batch between
# two blocks, outputs merged back in row order):
#   - gradcheck in float64, every element of every parameter: the branches
#     compute different functions of X (tanh(xs W + z2 U + b) and
#     sigmoid(xs V + b)) with a bias b both read, upstream parameters that
#     reach the blocks only through X, and a condition taking both branches;
#     then every row in the true branch, then every row in the false one;
#   - `infer` against NumPy in float64 (ours float32, to 1e-5), with the
#     condition as int64, uint8 and int32, at a batch size leaving a short
#     last batch;
#   - exit 2: a float condition, blocks writing an output with other dims
#     (both named), a block reading a batch-shaped variable not in X, a
#     condition of 2 (the row named).
import os, subprocess
import numpy as np

PR = os.environ["PR"]
NET = """
name: "if_else"
var { name: "x" shape: [-1, 3] }
var { name: "z" shape: [-1, 2] }
var { name: "c" shape: [-1] dtype: COND }
var { name: "y" shape: [-1, 1] dtype: INT64 }
var { name: "w_in" kind: PARAM shape: [3] init { type: "uniform" min: 0.5 max: 1.5 } }
block {
  name: "yes"
  op { type: "fc" inputs: ["xs", "yes.w", "sh.b"] outputs: "a" attrs { key: "size" value { i: 2 } } }
  op { type: "fc" inputs: ["z2", "yes.u"] outputs: "b" attrs { key: "size" value { i: 2 } } }
  op { type: "elementwise_add" inputs: ["a", "b"] outputs: "s" }
  op { type: "tanh" inputs: "s" outputs: "out" }
}
block {
  name: "no"
  op { type: "fc" inputs: ["xs", "no.w", "sh.b"] outputs: "p" attrs { key: "size" value { i: 2 } } }
  op { type: "sigmoid" inputs: "p" outputs: "out" }
}
op { type: "broadcast_mul" inputs: ["x", "w_in"] outputs: "xs" }
op { type: "fc" inputs: ["z", "zin.w"] outputs: "z2" attrs { key: "size" value { i: 2 } } }
op { type: "if_else" inputs: ["c", "xs", "z2"] outputs: "o"
     attrs { key: "true_block" value { block: "yes" } }
     attrs { key: "false_block" value { block: "no" } }
     attrs { key: "outputs" value { strings: "out" } } }
op { type: "fc" inputs: ["o", "head.w", "head.b"] outputs: "logits" attrs { key: "size" value { i: 2 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 8 epochs: 1 seed: 3
  optimizer { type: "sgd" lr: 0.1 }
  data { var: "x" file: "x.npy" } data { var: "z" file: "z.npy" }
  data { var: "c" file: "c.npy" } data { var: "y" file: "y.npy" } }
"""


def net(cond="INT64", edit=("", "")):
    text = NET.replace("COND", cond).replace(*edit)
    open("net.pbtxt", "w").write(text)


def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


rng = np.random.default_rng(5)
N = 17
x = rng.normal(size=(N, 3)).astype(np.float32)
z = rng.normal(size=(N, 2)).astype(np.float32)
cond = np.array([1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1], np.int64)
np.save("x.npy", x), np.save("z.npy", z), np.save("y.npy", rng.integers(0, 2, (N, 1)).astype(np.int64))
net()

# gradients against finite differences: both branches, then one empty
for name, c in [("both", cond), ("all true", np.ones(N, np.int64)), ("all false", np.zeros(N, np.int64))]:
    np.save("c.npy", c)
    rc, out = run("gradcheck", "net.pbtxt", "--elements", "0", "--rows", "8")
    assert rc == 0 and "checked 8 parameters" in out, f"gradcheck, {name}:\n{out}"
    print(f"gradcheck, {name}: {out.splitlines()[-1]}")
np.save("c.npy", cond)

# the forward against NumPy
os.makedirs("params", exist_ok=True)
shapes = {"w_in": (3,), "zin.w": (2, 2), "yes.w": (3, 2), "yes.u": (2, 2), "sh.b": (2,), "no.w": (3, 2),
          "head.w": (2, 2), "head.b": (2,)}
p = {k: rng.normal(size=s).astype(np.float32) for k, s in shapes.items()}
for k, v in p.items():
    np.save(f"params/{k}.npy", v)
f = {k: v.astype(np.float64) for k, v in p.items()}
xs = x.astype(np.float64) * f["w_in"]
z2 = z.astype(np.float64) @ f["zin.w"]
yes = np.tanh(xs @ f["yes.w"] + f["sh.b"] + z2 @ f["yes.u"])
no = 1 / (1 + np.exp(-(xs @ f["no.w"] + f["sh.b"])))
o = np.where(cond[:, None] == 1, yes, no)
logits = o @ f["head.w"] + f["head.b"]
for dtype, np_dtype in [("INT64", np.int64), ("UINT8", np.uint8), ("INT32", np.int32)]:
    net(dtype)
    np.save("cd.npy", cond.astype(np_dtype))
    rc, out = run("infer", "net.pbtxt", "--params", "params", "--data", "x=x.npy", "--data", "z=z.npy", "--data",
                  "c=cd.npy", "--fetch", "o=o.npy", "--fetch", "logits=logits.npy", "--batch-size", "5")
    assert rc == 0, out
    for name, ref in [("o", o), ("logits", logits)]:
        got = np.load(f"{name}.npy")
        assert got.shape == ref.shape, (name, got.shape)
        err = np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-3))
        assert err < 1e-5, f"{name}, condition {dtype}: max relative error {err}"
    print(f"infer, condition {dtype}: matches NumPy")
net()

# bad input
net("FLOAT32")
rc, out = run("check", "net.pbtxt")
assert rc == 2 and 'Cond "c" is float32 [-1]' in out and "uint8, int32 or int64" in out, out
net(edit=('["xs", "no.w", "sh.b"] outputs: "p" attrs { key: "size" value { i: 2 } }',
          '["xs", "no.w"] outputs: "p" attrs { key: "size" value { i: 3 } }'))
rc, out = run("check", "net.pbtxt")
assert rc == 2 and 'output "out": block "yes" writes it as float32 [-1, 2] but block "no" as float32 [-1, 3]' in out, out
net(edit=('inputs: ["c", "xs", "z2"]', 'inputs: ["c", "xs"]'))
rc, out = run("check", "net.pbtxt")
assert rc == 2 and 'block "yes" reads "z2" ([-1, 2]) from outside, a value per row of the batch' in out, out
net()
bad = cond.copy()
bad[11] = 2
np.save("bad.npy", bad)
rc, out = run("train", "net.pbtxt", "--data", "c=bad.npy", "--no-shuffle")
assert rc == 2 and 'Cond "c" row 3 is 2; a condition is 0 or 1' in out, out
print("ok")

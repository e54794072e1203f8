# infer_mlp.py — `paddle-run infer` on a small MLP against NumPy: the
# probabilities of fc(relu) -> fc -> softmax computed in float64 with NumPy
# must match ours (float32) to 1e-5, for a batch size that leaves a short last
# batch; the label is not needed to infer; a missing parameter and a
# mis-shaped one are exit 2 naming the variable (and both shapes).
import os, subprocess, sys
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(7)
NET = """
name: "mlp"
var { name: "x" shape: [-1, 5] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 7 } } attrs { key: "act" value { s: "relu" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax" inputs: "logits" outputs: "prob" }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
"""
open("net.pbtxt", "w").write(NET)
os.makedirs("params", exist_ok=True)
p = {"w1": rng.normal(size=(5, 7)), "b1": rng.normal(size=7), "w2": rng.normal(size=(7, 3)), "b2": rng.normal(size=3)}
for k, v in p.items():
    np.save(f"params/{k}.npy", v.astype(np.float32))
x = rng.normal(size=(17, 5)).astype(np.float32)
np.save("x.npy", x)

def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr

rc, out = run("infer", "net.pbtxt", "--params", "params", "--data", "x=x.npy", "--fetch", "prob=prob.npy",
              "--fetch", "h=h.npy", "--batch-size", "5")
assert rc == 0, out
f = {k: v.astype(np.float32).astype(np.float64) for k, v in p.items()}
h = np.maximum(x.astype(np.float64) @ f["w1"] + f["b1"], 0)
logits = h @ f["w2"] + f["b2"]
e = np.exp(logits - logits.max(axis=1, keepdims=True))
ref = e / e.sum(axis=1, keepdims=True)
prob = np.load("prob.npy")
assert prob.shape == (17, 3) and prob.dtype == np.float32, (prob.shape, prob.dtype)
err = np.max(np.abs(prob - ref) / np.maximum(np.abs(ref), 1e-6))
assert err < 1e-5, f"prob: max relative error {err}"
assert np.allclose(np.load("h.npy"), h, rtol=1e-5, atol=1e-6)
print(f"infer matches NumPy: max relative error {err:.2e}")

# missing parameter
os.rename("params/w2.npy", "w2.npy")
rc, out = run("infer", "net.pbtxt", "--params", "params", "--data", "x=x.npy", "--fetch", "prob")
assert rc == 2 and 'no parameter "w2"' in out, out
# mis-shaped parameter
np.save("params/w2.npy", np.zeros((7, 4), np.float32))
rc, out = run("infer", "net.pbtxt", "--params", "params", "--data", "x=x.npy", "--fetch", "prob")
assert rc == 2 and '"w2" has shape [7, 4], but the net needs [7, 3]' in out, out
# no output file is left behind by a failing run
assert not os.path.exists("prob2.npy")
# fetching to stdout prints the values as text
os.replace("w2.npy", "params/w2.npy")
rc, out = run("infer", "net.pbtxt", "--params", "params", "--data", "x=x.npy", "--fetch", "logits")
assert rc == 0 and out.startswith("logits float32 [17, 3]\n"), out
vals = np.array([[float(v) for v in line.split()] for line in out.splitlines()[1:]])
assert np.allclose(vals, logits, rtol=1e-5, atol=1e-5)
print("ok")

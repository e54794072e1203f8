# test_command.py — `paddle-run test` evaluates a checkpoint with train's own
# evaluation: its figures equal those of `train --iterations 0 --params DIR`
# to the last digit logged, at the file's batch size and at another; its
# --log record has the shape of train's "eval" record; --data replaces the
# evaluation data.
import json, os, subprocess
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(3)
N, D, C = 600, 6, 3
centers = rng.normal(scale=3.0, size=(C, D))
y = rng.integers(0, C, size=N)
x = (centers[y] + rng.normal(size=(N, D))).astype(np.float32)
np.save("x.npy", x[:500]); np.save("y.npy", y[:500].astype(np.int64))
np.save("ex.npy", x[500:]); np.save("ey.npy", y[500:].astype(np.int64))
open("net.pbtxt", "w").write("""
name: "blobs"
var { name: "x" shape: [-1, 6] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 16 } } attrs { key: "act" value { s: "tanh" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax" inputs: "logits" outputs: "prob" }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
op { type: "accuracy" inputs: ["prob", "y"] outputs: "acc" }
train { loss: "avg_loss" metrics: "acc" batch_size: 32 epochs: 1 seed: 5
        optimizer { type: "adam" lr: 0.003 }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" }
        eval_data { var: "x" file: "ex.npy" } eval_data { var: "y" file: "ey.npy" } }
""")

def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    assert r.returncode == 0, (args, r.stdout + r.stderr)
    return r.stdout

def records(path, kind):
    return [r for r in map(json.loads, open(path)) if r["type"] == kind]

run("train", "net.pbtxt", "--save", "ck")
for batch in ["32", "7"]:
    run("train", "net.pbtxt", "--iterations", "0", "--params", "ck", "--batch-size", batch, "--log", f"t{batch}.jsonl")
    end = records(f"t{batch}.jsonl", "end")[0]
    out = run("test", "net.pbtxt", "--params", "ck", "--batch-size", batch, "--log", f"e{batch}.jsonl")
    (ev,) = records(f"e{batch}.jsonl", "eval")
    assert sorted(ev) == ["epoch", "eval_acc", "eval_avg_loss", "rows", "step", "type"], ev
    assert (ev["step"], ev["epoch"], ev["rows"]) == (16, 1, 100), ev
    for k in ["eval_avg_loss", "eval_acc"]:
        assert ev[k] == end[k], (batch, k, ev[k], end[k])
    assert f"evaluated 100 rows at batch size {batch}: eval_avg_loss" in out, out
    print(f"batch {batch}: test and train --iterations 0 agree: {ev}")

# --data: the training rows, whose loss a numpy forward pass gives too
out = run("test", "net.pbtxt", "--params", "ck/latest", "--data", "x=x.npy", "--data", "y=y.npy")
assert out.startswith("evaluated 500 rows"), out
w1, b1, w2, b2 = (np.load(f"ck/latest/{n}.npy").astype(np.float64) for n in ["w1", "b1", "w2", "b2"])
z = np.tanh(x[:500] @ w1 + b1) @ w2 + b2
z -= z.max(1, keepdims=True)
loss = -(z[np.arange(500), y[:500]] - np.log(np.exp(z).sum(1))).mean()
got = float(out.split("eval_avg_loss ")[1].split()[0])
assert abs(got - loss) < 1e-4 * max(1, loss), (got, loss)
print(f"--data: eval_avg_loss {got} (numpy {loss:.6g})")

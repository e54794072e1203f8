# resume_batch.py — what --epochs and --iterations mean on --resume (issue
# 17.3): totals counted from the start of the run, the checkpoint's steps
# included, in the batches the checkpoint was trained with:
#   - 1 epoch, then --resume --epochs 2 trains exactly the one epoch left
#     (its log has one epoch line) and equals 2 epochs straight, byte for byte;
#   - --resume with another --batch-size (smaller: it trained 41 epochs where 2
#     were asked; larger: nothing, exit 0) is refused (exit 2) naming both
#     sizes, with --epochs or --iterations alike, and writes nothing;
#   - a resume with nothing left to train (--epochs 1 after 1 epoch) is
#     refused too, saying that the counts are totals.
import glob, json, os, subprocess
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(17)
np.save("x.npy", rng.normal(size=(200, 6)).astype(np.float32))
np.save("y.npy", rng.integers(0, 3, size=200).astype(np.int64))
open("net.pbtxt", "w").write("""
name: "resume_batch"
var { name: "x" shape: [-1, 6] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 12 } } attrs { key: "act" value { s: "relu" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 16 epochs: 2 log_every: 5
        optimizer { type: "adam" lr: 0.01 schedule { type: "cosine" decay_steps: 26 } }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
""")


def run(*args):
    r = subprocess.run([PR, "train", "net.pbtxt", "--threads", "1", *args], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def params(d):
    ck = os.path.realpath(os.path.join(d, "latest"))
    return {os.path.basename(f): open(f, "rb").read() for f in sorted(glob.glob(ck + "/*.npy"))}


rc, out = run("--save", "straight")
assert rc == 0 and "finished: 26 steps" in out, out  # 13 batches of 16 per epoch
rc, out = run("--save", "half", "--epochs", "1")
assert rc == 0 and "finished: 13 steps" in out, out
before = sorted(os.listdir("half"))

# another batch size, smaller or larger, with --epochs or --iterations: refused
for bs in ("4", "64"):
    for more in (["--epochs", "2"], ["--iterations", "30"]):
        rc, out = run("--resume", "half", "--save", "half", "--batch-size", bs, *more)
        want = (f"paddle-run: --resume half: the checkpoint was trained at batch size 16 (its 13 steps and position "
                f"in epoch 2 count batches of that size), this run asks for {bs}; resume with --batch-size 16, or "
                f"start a new run from its parameters with --params half")
        assert rc == 2 and want in out, (bs, more, rc, out)
assert sorted(os.listdir("half")) == before, os.listdir("half")

# nothing left: --epochs 1 after 1 epoch
rc, out = run("--resume", "half", "--save", "half", "--epochs", "1")
assert rc == 2 and ("paddle-run: --resume half: nothing to train: the checkpoint is at step 13 (1 epoch done), and "
                    "this run asks for 1 epoch (13 steps) in all; --epochs and --iterations count from the start of "
                    "the run, the checkpoint's included, so ask for more") in out, out
rc, out = run("--resume", "half", "--save", "half", "--iterations", "13")
assert rc == 2 and "this run asks for 13 steps in all" in out, out
assert sorted(os.listdir("half")) == before, os.listdir("half")

# the same batch: --epochs 2 is the one epoch left, and exactly the straight run
rc, out = run("--resume", "half", "--save", "half", "--log", "rest.jsonl")
assert rc == 0 and "resuming half/step-00000013 at step 13 (epoch 2), training to step 26" in out, out
assert "finished: 26 steps" in out, out
log = [json.loads(l) for l in open("rest.jsonl")]
assert [r["epoch"] for r in log if r["type"] == "epoch"] == [2], log
assert params("half") == params("straight"), "1 epoch + resume + 1 epoch differs from 2 epochs straight"
print("resume counts from the run's start; another batch size and nothing to train are refused")

# train_stops.py — how a training run stops: SIGTERM and SIGINT finish the
# step, save a checkpoint (with --save) and exit 143 / 130, and the checkpoint
# resumes; a loss that goes non-finite stops the run with exit 1, naming the
# first op whose output went non-finite.
import json, os, signal, subprocess, time
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(11)
np.save("x.npy", rng.normal(size=(4000, 8)).astype(np.float32))
np.save("y.npy", rng.integers(0, 4, size=4000).astype(np.int64))
open("net.pbtxt", "w").write("""
name: "stops"
var { name: "x" shape: [-1, 8] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 64 } } attrs { key: "act" value { s: "relu" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 4 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 16 epochs: 100000 log_every: 10
        optimizer { type: "momentum" lr: 0.01 }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
""")

for sig, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
    d = f"ck{code}"
    p = subprocess.Popen([PR, "train", "net.pbtxt", "--save", d, "--log", f"{d}.jsonl"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        if os.path.exists(f"{d}.jsonl") and '"type":"step"' in open(f"{d}.jsonl").read():
            break
        time.sleep(0.05)
    p.send_signal(sig)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == code, (p.returncode, out)
    assert "interrupted" in out and "saved" in out, out
    man = open(os.path.join(d, "latest", "manifest.pbtxt")).read()
    assert "step:" in man, man
    import re
    step = int(re.search(r"^step: (\d+)", man, re.M).group(1))
    r = subprocess.run([PR, "train", "net.pbtxt", "--resume", d, "--iterations", str(step + 3), "--save", d + "b"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"step-{step + 3:08d}" in os.path.realpath(os.path.join(d + "b", "latest")), r.stderr
    print(f"signal {sig.name}: exit {code}, checkpoint {os.path.realpath(os.path.join(d, 'latest'))}")

# a diverging run: a huge learning rate drives the loss to inf/nan
r = subprocess.run([PR, "train", "net.pbtxt", "--lr", "1e30", "--iterations", "50"], capture_output=True, text=True)
assert r.returncode == 1, (r.returncode, r.stderr)
assert "the loss \"avg_loss\" is" in r.stderr and "op #" in r.stderr, r.stderr
print(r.stderr.strip().splitlines()[-1])
print("ok")

# save_dir.py — who may write checkpoints into a --save directory (issues
# 17.4 and 18.7):
#   - one writer at a time: while a run saves into ck (every step), a second
#     `train --save ck` (resuming from it, or fresh) is refused at start with
#     exit 2 naming the first run's pid, and a watcher reading ck/latest the
#     whole time always finds a complete checkpoint there; the first run's
#     checkpoints stay a single run's (steps only it reported saving);
#   - the lock goes with its process: after a normal end no ck/.lock is left;
#     after a SIGKILL the stale file does not stop the next run;
#   - a directory holding a run's checkpoints takes no other run's: a fresh
#     `--save ck` (the same command again) is refused, `--resume ck --save ck`
#     continues, `--resume ck/step-N --save ck` (an earlier point) too;
#   - `--params DIR` of another net is refused (exit 2) unless
#     --allow-partial-params; a checkpoint of this net trained with another
#     optimizer fine-tunes with no complaint.
import os, re, signal, subprocess, threading, time
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(3)
np.save("x.npy", rng.normal(size=(512, 8)).astype(np.float32))
np.save("y.npy", rng.integers(0, 4, size=512).astype(np.int64))
NET = """
name: "%s"
var { name: "x" shape: [-1, 8] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "%s", "b1"] outputs: "h" attrs { key: "size" value { i: 16 } } attrs { key: "act" value { s: "relu" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 4 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 16 iterations: 100000000 log_every: 100000
        optimizer { type: "sgd" lr: 0.01 }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
"""
open("net.pbtxt", "w").write(NET % ("a", "w1"))
open("other.pbtxt", "w").write(NET % ("b", "v1"))


def run(*args, timeout=60):
    r = subprocess.run([PR, "train", *args, "--threads", "1"], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


# ---- one writer: a run saving every step, and others trying to join it ----
stop, bad, looks = threading.Event(), [], [0]


def watch():
    while not stop.is_set():
        t = os.readlink("ck/latest")
        # missing while latest still names it (not merely pruned after we read the link)
        if not os.path.exists(os.path.join("ck", t, "manifest.pbtxt")) and os.readlink("ck/latest") == t:
            bad.append(t)
        looks[0] += 1


first_log = open("first.log", "w")  # a file, not a pipe nobody reads while it saves
first = subprocess.Popen([PR, "train", "net.pbtxt", "--save", "ck", "--save-every", "1", "--keep", "2",
                          "--threads", "1"], stdout=first_log, stderr=subprocess.STDOUT)
try:
    deadline = time.time() + 30
    while not os.path.exists("ck/latest") and time.time() < deadline:
        time.sleep(0.01)
    assert os.path.exists("ck/latest"), "the first run saved nothing in 30 s"

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    who = f"another process (pid {first.pid}) is saving checkpoints there"
    for i in range(10):
        for args in (["--resume", "ck", "--save", "ck", "--iterations", "1"], ["--save", "ck", "--iterations", "3"]):
            rc, out = run("net.pbtxt", *args)
            assert rc == 2 and f"paddle-run: --save ck: {who}" in out, (args, rc, out)
finally:  # never leave it running, whatever failed
    stop.set()
    first.send_signal(signal.SIGTERM)
w.join()
first.wait(timeout=60)
out = open("first.log").read()
assert first.returncode == 143, (first.returncode, out)
assert not bad, f"ck/latest named a missing checkpoint {len(bad)} times: {bad[:3]}"
saved = set(re.findall(r"saved ck/(step-\d+)", out))
left = {n for n in os.listdir("ck") if n.startswith("step-")}
assert left <= saved, f"checkpoints the first run never saved: {left - saved}"
assert not os.path.exists("ck/.lock"), "the lock file outlived its run"
print(f"20 second writers refused; latest resolved on all {looks[0]} looks; {len(saved)} checkpoints saved")

# ---- a killed holder's lock file does not lock anyone out ----
p = subprocess.Popen([PR, "train", "net.pbtxt", "--resume", "ck", "--save", "ck", "--threads", "1"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.time() + 30
while not os.path.exists("ck/.lock") and time.time() < deadline:
    time.sleep(0.01)
p.kill()
p.wait()
assert os.path.exists("ck/.lock")
step = int(os.readlink("ck/latest").split("-")[1])
rc, out = run("net.pbtxt", "--resume", "ck", "--save", "ck", "--iterations", str(step + 2))
assert rc == 0 and "saved ck/step-" in out, out
assert not os.path.exists("ck/.lock")
rc, out = run("net.pbtxt", "--resume", "ck", "--iterations", str(step + 3))  # the directory still loads
assert rc == 0, out

# ---- another run into the same directory ----
latest = os.readlink("ck/latest")
rc, out = run("net.pbtxt", "--save", "ck", "--iterations", "3")
assert rc == 2 and ("paddle-run: --save ck already holds another run's checkpoints (ck/latest -> %s); to continue "
                    "that run give --resume ck, otherwise save into a new directory" % latest) in out, out
rc, out = run("net.pbtxt", "--resume", "ck", "--save", "elsewhere", "--iterations", str(step + 4))
assert rc == 0, out  # continuing it into a new directory is fine
rc, out = run("net.pbtxt", "--resume", "elsewhere", "--save", "ck", "--iterations", str(step + 5))
assert rc == 2 and "--save ck already holds another run's checkpoints" in out, out
rc, out = run("net.pbtxt", "--resume", f"ck/{latest}", "--save", "ck", "--iterations", str(step + 4))
assert rc == 0, out

# ---- --params of another net ----
rc, out = run("other.pbtxt", "--params", "ck", "--iterations", "1")
assert rc == 2, out
for line in ["missed v1 (not in ck/", "skipped w1 (no such parameter in the net)",
             "paddle-run: --params ck does not hold this net's parameters (2 listed above missed or skipped: "
             "another net's?); give --allow-partial-params to start from the ones that match"]:
    assert line in out, (line, out)
rc, out = run("other.pbtxt", "--params", "ck", "--iterations", "1", "--allow-partial-params")
assert rc == 0 and "missed v1" in out, out
rc, out = run("net.pbtxt", "--params", "ck", "--iterations", "2", "--optimizer", "adam", "--save", "adam")
assert rc == 0 and "--params" not in out, out
rc, out = run("net.pbtxt", "--params", "adam", "--iterations", "1")  # its moments are optimizer state, passed by
assert rc == 0 and "--params" not in out, out
print("another run's --save directory and another net's --params refused")

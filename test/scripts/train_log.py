# train_log.py — train's --log is the run's history and its stderr is read by
# a person: the first record of every run holds its settings, the last one
# how it ended with the final evaluation; a resumed run appends; a log that
# cannot be written ends the run with exit 1 after saving the last good step;
# numbers read well; progress lines come every N seconds when stderr is not
# a terminal (PADDLE_RUN_PROGRESS_SECONDS).
import json, os, re, resource, signal, subprocess, time
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(3)
np.save("x.npy", rng.normal(size=(40, 4)).astype(np.float32))
np.save("y.npy", rng.integers(0, 3, size=(40, 1)).astype(np.int64))
np.save("ex.npy", rng.normal(size=(12, 4)).astype(np.float32))
np.save("ey.npy", rng.integers(0, 3, size=(12, 1)).astype(np.int64))
open("net.pbtxt", "w").write("""
name: "logged"
var { name: "x" shape: [-1, 4] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 8 } } attrs { key: "act" value { s: "relu" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
op { type: "accuracy" inputs: ["logits", "y"] outputs: "acc" }
train { loss: "avg_loss" metrics: "acc" batch_size: 8 epochs: 2 seed: 4 log_every: 2
        optimizer { type: "adam" lr: 0.01 }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" }
        eval_data { var: "x" file: "ex.npy" } eval_data { var: "y" file: "ey.npy" } }
""")


def run(*args, env=None, limit=None):
    def pre():
        if limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    e = dict(os.environ, **(env or {}))
    r = subprocess.run([PR, "train", "net.pbtxt", *args], capture_output=True, text=True, env=e, preexec_fn=pre,
                       timeout=120)
    return r.returncode, r.stderr


def records(path):
    return [json.loads(l) for l in open(path)]


# ---- a run stopped by --iterations: settings first, the end with the evaluation
rc, err = run("--iterations", "3", "--save", "ck", "--log", "a.jsonl", "--threads", "1")
assert rc == 0, err
log = records("a.jsonl")
assert [r["type"] for r in log] == ["run", "start", "step", "step", "end"], log
s = log[0]
want = {"net": "logged", "net_file": "net.pbtxt", "data": {"x": "x.npy", "y": "y.npy"},
        "eval_data": {"x": "ex.npy", "y": "ey.npy"}, "batch_size": 8, "iterations": 3, "optimizer": "adam",
        "lr": 0.01, "seed": 4, "threads": 1, "device": "cpu", "resume": None, "save": "ck", "rows": 40}
assert {k: s.get(k) for k in want} == want, s
assert re.fullmatch(r"[0-9a-f]{8}", s["net_crc32"]) and s["version"], s
end = log[-1]
final = re.search(r"^finished: 3 steps in \S+ s eval_avg_loss (\S+) eval_acc (\S+)$", err, re.M)
assert final, err
assert end["status"] == "finished" and end["exit"] == 0 and end["step"] == 3, end
assert f"{end['eval_avg_loss']:.5g}" == final.group(1) and f"{end['eval_acc']:.5g}" == final.group(2), (end, err)
print("--iterations 3: the log's end record carries the final evaluation", final.group(1), final.group(2))

# ---- --resume appends a second run, with its own settings and end records
rc, err = run("--resume", "ck", "--log", "a.jsonl", "--iterations", "7")
assert rc == 0, err
log2 = records("a.jsonl")
assert log2[:len(log)] == log, "the resumed run changed the first run's records"
new = log2[len(log):]
assert new[0]["type"] == "run" and new[0]["resume"] == "ck" and new[-1]["type"] == "end", new
assert new[-1]["status"] == "finished" and new[-1]["step"] == 7, new[-1]
assert [r["step"] for r in new if r["type"] == "step"] == [4, 6, 7], new  # log_every 2, and the last step
epochs = [r for r in new if r["type"] == "epoch"]
assert len(epochs) == 1 and epochs[0]["epoch"] == 1 and 0 <= epochs[0]["acc"] <= 1, epochs
print("--resume: appended", len(new), "records after", len(log))

# ---- epoch lines: never empty, numbers in %g, times with a precision
rc, err = run("--epochs", "2", "--log", "b.jsonl", "--save", "b")
assert rc == 0, err
done = [l for l in err.splitlines() if l.startswith("epoch ") and " done:" in l]
assert len(done) == 2, err
for l in done:
    assert re.fullmatch(r"epoch \d done: step \d+, [0-9.e-]+ s \(epoch [0-9.e-]+ s\) avg_loss \S+ acc \S+ "
                        r"eval_avg_loss \S+ eval_acc \S+", l), l
    assert not re.search(r" 0\.0 s", l), l
ends = [r for r in records("b.jsonl") if r["type"] == "end"]
assert ends[0]["epochs_done"] == 2 and ends[0]["status"] == "finished", ends
# the log and the manifest count epochs alike: epochs done
man_epoch = lambda d: int(re.search(r"^epoch: (\d+)", open(f"{d}/latest/manifest.pbtxt").read(), re.M).group(1))
assert man_epoch("b") == 2 == [r for r in records("b.jsonl") if r["type"] == "epoch"][-1]["epoch"], man_epoch("b")
assert man_epoch("ck") == log[-1]["epochs_done"] == 0, (man_epoch("ck"), log[-1])
# a huge loss reads as %g, not as 27 digits
np.save("big.npy", (rng.normal(size=(40, 4)) * 1e25).astype(np.float32))
rc, err = run("--iterations", "2", "--data", "x=big.npy", "--lr", "1e-9")
assert rc == 0, err
assert not re.search(r"\d{12}", err), err
print("epoch line:", done[-1])

# ---- progress when stderr is not a terminal: every N seconds, with % and ETA
rc, err = run("--epochs", "2", "--log-every", "1000", env={"PADDLE_RUN_PROGRESS_SECONDS": "0.000001"})
assert rc == 0, err
prog = [l for l in err.splitlines() if " step " in l and "done" not in l]
assert len(prog) == 10, err  # every step: 0.000001 s passed since the last line
assert re.fullmatch(r"epoch 1 step 1/10 avg_loss \S+ acc \S+ lr 0\.01 \d+ ex/s, 10\.0%, ETA \d+s", prog[0]), prog
rc, err = run("--epochs", "2", "--log-every", "1000")  # default 10 s: only the last step's line
assert len([l for l in err.splitlines() if " step " in l and "done" not in l]) == 1, err
rc, err = run("--epochs", "1", env={"PADDLE_RUN_PROGRESS_SECONDS": "soon"})
assert rc == 2 and err == 'paddle-run: PADDLE_RUN_PROGRESS_SECONDS must be seconds >= 0, got "soon"\n', (rc, err)
print("progress:", prog[0])

# ---- on a terminal: one line kept up to date (\r, and cleared to its end),
# then the epoch line on a line of its own
import pty
master, slave = pty.openpty()
p = subprocess.Popen([PR, "train", "net.pbtxt", "--epochs", "1"], stderr=slave, stdout=subprocess.DEVNULL)
os.close(slave)
tty = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:
        break
    if not chunk:
        break
    tty += chunk
p.wait(timeout=60)
os.close(master)
tty = tty.decode().replace("\r\n", "\n")
assert p.returncode == 0, tty
assert re.match(r"\repoch 1 step 1/5 avg_loss \S+ acc \S+ lr 0\.01 \d+ ex/s, 20\.0%, ETA \d+s\x1b\[K\r", tty), repr(tty)
assert "\x1b[K\n\nepoch 1 done: step 5" in tty or "\x1b[K\nepoch 1 done: step 5" in tty, repr(tty)
print("terminal:", repr(tty.split("\r")[1]))

# ---- a log that cannot be written: exit 1 with the reason
rc, err = run("--iterations", "3", "--log", "/dev/full", "--save", "full")
assert rc == 1, (rc, err)
assert err.endswith("paddle-run: --log /dev/full: cannot write the log: No space left on device\n"), err
assert not os.path.exists("full"), "a run that failed before its first step left a save directory"
# ... and one that fills up mid-run (a file size limit, as a full disk): the
# last good step is saved first, then the run ends with exit 1
rc, err = run("--epochs", "2", "--optimizer", "sgd", "--log-every", "1", "--log", "c.jsonl", "--save", "limited",
              limit=1200)  # sgd: a manifest that fits
assert rc == 1, (rc, err)
man = open("limited/latest/manifest.pbtxt").read()
step = int(re.search(r"^step: (\d+)", man, re.M).group(1))
assert err.endswith(f"paddle-run: --log c.jsonl: cannot write the log: File too large; checkpoint of step {step} saved\n"), err
logged = [json.loads(l)["step"] for l in open("c.jsonl").read().splitlines()[:-1] if '"type":"step"' in l]
assert 1 <= step < 10 and step >= logged[-1], (step, logged, err)  # mid-run
assert f"saved limited/step-{step:08d}" in err, err
print(f"log past its size limit: exit 1, checkpoint of step {step} saved first")

# ---- how a run ended: interrupted, failed with the message
p = subprocess.Popen([PR, "train", "net.pbtxt", "--epochs", "100000", "--log", "d.jsonl"], stderr=subprocess.PIPE,
                     text=True)
deadline = time.time() + 30
while time.time() < deadline and not (os.path.exists("d.jsonl") and '"type":"step"' in open("d.jsonl").read()):
    time.sleep(0.05)
p.send_signal(signal.SIGINT)
p.communicate(timeout=60)
assert p.returncode == 130, p.returncode
end = records("d.jsonl")[-1]
assert end["type"] == "end" and end["status"] == "interrupted" and end["signal"] == 2 and end["exit"] == 130, end
rc, err = run("--iterations", "20", "--lr", "1e30", "--log", "e.jsonl")
assert rc == 1, (rc, err)
end = records("e.jsonl")[-1]
assert end["status"] == "failed" and end["exit"] == 1 and end["message"] in err, (end, err)
assert "-nan" not in err, err
print("ends:", "interrupted (signal 2);", "failed:", end["message"][:60])
print("ok")

# data_shrinks.py — a memory-mapped data file truncated while `train` reads
# it (issue 18.4): the run ends with exit 1 and "FILE changed size while
# reading (row N)", not a death by SIGBUS, and with --save keeps a checkpoint
# of the last good step, which --resume accepts. Twice: a plain .npy (mapped
# itself) and a gzip file whose decoded copy in the cache is mapped (the copy
# is truncated).
import glob, os, re, subprocess, sys
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(3)
x = rng.normal(size=(200000, 4)).astype(np.float32)
np.save("x.npy", x)
np.save("y.npy", rng.integers(0, 2, (200000, 1)).astype(np.int64))
open("net.pbtxt", "w").write("""
var { name: "x" shape: [-1, 4] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 8 } } attrs { key: "act" value { s: "relu" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 2 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg" }
train { loss: "avg" batch_size: 32 epochs: 100 log_every: 200 optimizer { type: "sgd" lr: 0.01 }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
""")
failures = []


HEADER = os.path.getsize("x.npy") - x.nbytes  # the .npy header before the rows


def shrink_during_training(label, data_file, victim, data_start, extra_env=None):
    """Trains on data_file, truncates `victim` after the first logged step
    to its first page past data_start (where the .npy's bytes begin in it),
    and checks how the run ends."""
    keep = data_start + 4096
    rows_kept = (keep - data_start - HEADER) // 16  # rows wholly inside the kept bytes stay readable
    ck = f"ck-{label}"
    env = dict(os.environ, **(extra_env or {}))
    p = subprocess.Popen([PR, "train", "net.pbtxt", "--data", f"x={data_file}", "--save", ck, "--threads", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    for line in p.stdout:
        lines.append(line)
        if re.match(r"epoch 1 step 200/", line):
            os.truncate(victim, keep)  # the header and a few rows stay
            break
    try:
        rest, _ = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rest, _ = p.communicate()
    out = "".join(lines) + rest
    rc = p.returncode
    m = re.search(r"paddle-run: (\S+) changed size while reading \(row (\d+)\): .*; checkpoint of step (\d+) saved", out)
    if rc != 1 or not m:
        failures.append(f"{label}: expected exit 1 and 'FILE changed size while reading (row N): ...; checkpoint of "
                        f"step K saved', got exit {rc} (signal {-rc if rc < 0 else 0}):\n{out[-1500:]}")
        return
    if m.group(1) != data_file:
        failures.append(f"{label}: the message names {m.group(1)}, not {data_file}")
    if int(m.group(2)) < rows_kept:
        failures.append(f"{label}: row {m.group(2)} is inside the part that was kept")
    step = int(m.group(3))
    manifest = open(os.path.join(ck, "latest", "manifest.pbtxt")).read()
    if not re.search(rf"\bstep: {step}\b", manifest) or step < 200:
        failures.append(f"{label}: checkpoint of step {step} reported, manifest says:\n{manifest[:300]}")
    # the checkpoint resumes (on the intact data)
    r = subprocess.run([PR, "train", "net.pbtxt", "--resume", ck, "--iterations", str(step + 1)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    if r.returncode != 0:
        failures.append(f"{label}: --resume from the kept checkpoint failed (exit {r.returncode}):\n{r.stdout[-800:]}")
    print(f"{label}: exit 1 after {step} steps, row {m.group(2)}, checkpoint kept")


# 1. a plain .npy, mapped
np.save("shrink.npy", x)
shrink_during_training("plain", "shrink.npy", "shrink.npy", 0)

# 2. a gzip file's decoded copy in the cache, mapped: the first run writes the
# copy, the second maps it; the copy is truncated under the second
cache = os.path.abspath("cache")
import gzip

open("shrink.npy.gz", "wb").write(gzip.compress(open("x.npy", "rb").read(), compresslevel=1, mtime=0))
env = {"PADDLE_RUN_CACHE": cache}
r = subprocess.run([PR, "train", "net.pbtxt", "--data", "x=shrink.npy.gz", "--iterations", "1"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ, **env), timeout=60)
copies = glob.glob(os.path.join(cache, "*.data"))
if r.returncode != 0 or len(copies) != 1:
    failures.append(f"cache: the first run (exit {r.returncode}) left {copies} in the cache:\n{r.stdout[-800:]}")
else:
    # the copy's decoded bytes start a page in (PD_CACHE_DATA, lib/base/fileutil.c)
    shrink_during_training("cached", "shrink.npy.gz", copies[0], 4096, env)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("data_shrinks: both runs ended with exit 1, a message and a checkpoint")

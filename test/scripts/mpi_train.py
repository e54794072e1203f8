# mpi_train.py — data-parallel training under mpirun on this machine
# (oversubscribed): -np 2 and -np 4 end with the parameters of one process
# with the same (global) batch, in float64 to 1e-6 relative, and repeat
# bit for bit (summed in shared memory, and on 2 ranks the same bits
# through MPI's allreduce); the evaluation and the log match too; --resume works with
# another rank count; `desc --ranks` shows the allreduce op; and the faults:
# bad input on every rank or on one is reported once (with the rank), ranks
# that drift apart are stopped by the checksum, ranks given different data
# of the same shape are refused at start, and a rank that hangs or
# dies ends the job within a few seconds.
import glob, json, os, re, subprocess, sys, time
import numpy as np

PR, ROOT = os.environ["PR"], os.environ["ROOT"]
env = dict(os.environ)
setup = subprocess.run(["sh", "-c", f". {ROOT}/test/mpi/env.sh && mpi_available && env -0"],
                       capture_output=True, text=True, env=env)
if setup.returncode != 0:
    print(setup.stdout.strip() or "skipped: no MPI")
    sys.exit(77)
env = dict(kv.split("=", 1) for kv in setup.stdout.split("\0") if "=" in kv)

rng = np.random.default_rng(3)
N, D, C = 250, 6, 3
centers = rng.normal(scale=3.0, size=(C, D))
y = rng.integers(0, C, size=N)
x = centers[y] + rng.normal(size=(N, D))
# 203 rows in batches of 30: the last batch (23 rows) splits unevenly
np.save("x.npy", x[:203]); np.save("y.npy", y[:203].astype(np.int64))
np.save("ex.npy", x[203:]); np.save("ey.npy", y[203:].astype(np.int64))
open("net.pbtxt", "w").write("""
name: "blobs64"
var { name: "x" shape: [-1, 6] dtype: FLOAT64 }
var { name: "y" shape: [-1, 1] dtype: INT64 }
var { name: "w1" dtype: FLOAT64 } var { name: "b1" dtype: FLOAT64 }
var { name: "w2" dtype: FLOAT64 } var { name: "b2" dtype: FLOAT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 16 } } attrs { key: "act" value { s: "tanh" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax" inputs: "logits" outputs: "prob" }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
op { type: "accuracy" inputs: ["prob", "y"] outputs: "acc" }
train { loss: "avg_loss" metrics: "acc" batch_size: 30 epochs: 3 seed: 5 log_every: 4
        optimizer { type: "adam" lr: 0.01 clip_norm: 1.0 }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" }
        eval_data { var: "x" file: "ex.npy" } eval_data { var: "y" file: "ey.npy" } }
""")

def run(np_, *args, wrap=None, timeout=60, extra_env=None):
    cmd = [PR, "train", "net.pbtxt", "--threads", "1", *args]
    if wrap: cmd = ["sh", "-c", wrap.replace("PR", " ".join(cmd))]
    if np_: cmd = ["mpirun", "-np", str(np_), *cmd]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**env, **(extra_env or {})}, timeout=timeout)
    return r.returncode, r.stdout + r.stderr, time.time() - t0

def params(d):
    ck = os.path.realpath(os.path.join(d, "latest"))
    return {os.path.basename(f): np.load(f) for f in sorted(glob.glob(ck + "/*.npy"))}

def raw(d):
    ck = os.path.realpath(os.path.join(d, "latest"))
    return {os.path.basename(f): open(f, "rb").read() for f in sorted(glob.glob(ck + "/*.npy"))}

def rel_err(a, b):
    assert a.keys() == b.keys(), (a.keys(), b.keys())
    return max(float(np.max(np.abs(a[k] - b[k]))) / max(float(np.max(np.abs(a[k]))), 1e-30) for k in a)

def finished(out):
    lines = [l for l in out.splitlines() if l.startswith("finished:")]
    assert len(lines) == 1, out  # rank 0 alone reports
    return lines[0].split(" s ", 1)[1]

# ---- equivalence ----
rc, out1, _ = run(0, "--save", "one", "--log", "one.jsonl")
assert rc == 0, out1
ref = params("one")
for n in (2, 4):
    rc, out, t = run(n, "--save", f"np{n}", "--log", f"np{n}.jsonl", "--check-every", "3")
    assert rc == 0, out
    e = rel_err(ref, params(f"np{n}"))
    print(f"-np {n}: parameters rel err {e:.2e} vs one process ({t:.1f} s)")
    assert e <= 1e-6, e
    assert finished(out) == finished(out1), (out, out1)  # eval metrics reduced over the ranks
    assert len(open(f"np{n}.jsonl").readlines()) == len(open("one.jsonl").readlines())
    assert len(glob.glob(f"np{n}/step-*")) == 1  # one writer
    rc, out, _ = run(n, "--save", f"np{n}b")
    assert rc == 0, out
    assert raw(f"np{n}") == raw(f"np{n}b"), f"-np {n} is not bit-identical across repeats"
    lines = [json.loads(l) for l in open(f"np{n}.jsonl")]
    start = [o for o in lines if o.get("type") == "start"][0]  # after the run's settings
    assert lines[0]["type"] == "run" and lines[0]["ranks"] == n, lines[0]
    assert start["allreduce"] == "shared memory", start
    last = [o for o in lines if o.get("type") == "step"][-1]  # every step averaged in the shared memory
    assert last["shared_steps"] == last["step"], last
# the same through MPI's allreduce (as between machines): equal to one process,
# and on 2 ranks bit-identical to the shared-memory sum (a + b either way)
rc, out, _ = run(2, "--save", "np2mpi", "--log", "np2mpi.jsonl", extra_env={"PADDLE_RUN_ALLREDUCE": "mpi"})
assert rc == 0, out
lines = [json.loads(l) for l in open("np2mpi.jsonl")]
start = [o for o in lines if o.get("type") == "start"][0]
assert start["allreduce"] == "mpi (PADDLE_RUN_ALLREDUCE=mpi)", start
assert [o for o in lines if o.get("type") == "step"][-1]["shared_steps"] == 0
e = rel_err(ref, params("np2mpi"))
print(f"-np 2 through MPI's allreduce: parameters rel err {e:.2e} vs one process")
assert e <= 1e-6, e
assert raw("np2mpi") == raw("np2"), "-np 2: MPI's allreduce and the shared-memory sum differ"
print("eval metrics and log lines equal; repeats bit-identical")

# ---- a rank without rows: 203 rows at batch 40 end with a batch of 3, so on
# 4 ranks rank 0 holds none of it and joins with weight 0 ----
rc, out, _ = run(0, "--batch-size", "40", "--save", "b40")
assert rc == 0, out
rc, out, _ = run(4, "--batch-size", "40", "--save", "b40np4", "--log", "b40np4.jsonl")
assert rc == 0, out
e = rel_err(params("b40"), params("b40np4"))
print(f"-np 4 with an empty rank in the last batches: parameters rel err {e:.2e} vs one process")
assert e <= 1e-6, e
last = [o for o in map(json.loads, open("b40np4.jsonl")) if o.get("type") == "step"][-1]
assert last["shared_steps"] == last["step"], last

# ---- resume with another rank count: 1 epoch on 2 ranks, then 2 more on 1 and on 4 ----
rc, out, _ = run(2, "--epochs", "1", "--save", "half")
assert rc == 0, out
for n in (0, 4):
    rc, out, _ = run(n, "--resume", "half", "--save", f"res{n}")
    assert rc == 0, out
    e = rel_err(ref, params(f"res{n}"))
    print(f"resume from 2 ranks on {n or 1}: rel err {e:.2e}")
    assert e <= 1e-6, e

# ---- desc --ranks shows the allreduce before the updates ----
r = subprocess.run([PR, "desc", "net.pbtxt", "--optimizer", "sgd", "--ranks", "4"], capture_output=True, text=True)
types = re.findall(r'type: "(\w+)"', r.stdout)
assert r.returncode == 0 and types.count("allreduce") == 1, r.stdout + r.stderr
assert types.index("allreduce") < types.index("clip_by_global_norm") < types.index("sgd"), types
open("desc4.pbtxt", "w").write(r.stdout)
rc, out, _ = run(2, "--save", "fromdesc", "--optimizer", "sgd")  # (the flag only picks sgd here)
assert rc == 0, out
r = subprocess.run(["mpirun", "-np", "2", PR, "train", "desc4.pbtxt", "--save", "desc2"], capture_output=True,
                   text=True, env=env)
assert r.returncode == 0, r.stdout + r.stderr
assert rel_err(params("fromdesc"), params("desc2")) <= 1e-12
print("desc --ranks 4: allreduce before clip and sgd; the printed net trains like the original")

# ---- faults ----
rc, out, _ = run(2, "--data", "x=missing.npy")
assert rc == 2 and out.count("missing.npy: cannot open") == 1, out
rc, out, _ = run(2, wrap='if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec PR --data x=missing.npy; else exec PR; fi')
assert rc == 2 and out.count("missing.npy: cannot open") == 1 and "[rank 1] paddle-run: --data x=missing.npy" in out, out
rc, out, _ = run(2, "--check-every", "2", wrap='exec PR --lr 0.0$((OMPI_COMM_WORLD_RANK + 1))')
assert rc == 1 and out.count("the ranks' parameters differ after step 2") == 1, out
rc, out, _ = run(2, wrap='exec PR --iterations $((OMPI_COMM_WORLD_RANK + 5))')
assert rc == 2 and out.count("the ranks were given different runs") == 1, out
# ranks reading different data of the same shape (rank 1 has the rows in
# another order) are refused at start; the same bytes under another name are not
np.save("x_other.npy", x[:203][::-1].copy()); np.save("x_copy.npy", x[:203]); np.save("ey_other.npy", (y[203:] + 1) % C)
rc, out, _ = run(2, wrap='if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec PR --data x=x_other.npy; else exec PR; fi')
assert rc == 2 and out.count('paddle-run: the ranks were given different data for "x" (x.npy on rank 0 does not '
                             'hold the same bytes on every rank): start every rank with the same data files') == 1, out
rc, out, _ = run(2, wrap='if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec PR --eval-data y=ey_other.npy; else exec PR; fi')
assert rc == 2 and out.count('the ranks were given different evaluation data for "y"') == 1, out
rc, out, _ = run(2, "--iterations", "2", wrap='if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec PR --data x=x_copy.npy; else exec PR; fi')
assert rc == 0, out
print("bad input reported once, with the rank; a divergence stops the run; different runs and data are refused")

def catches(pid, signum):
    """Whether process pid has a handler for signal signum (Linux: /proc/PID/status SigCgt)."""
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("SigCgt:"):
                return (int(line.split()[1], 16) >> (signum - 1)) & 1 == 1
    except OSError:
        pass
    return False


long = ["--iterations", "100000000", "--log-every", "1000000", "--comm-timeout", "2"]
for sig, what in (("TERM", "gets SIGTERM"), ("STOP", "hangs"), ("KILL", "dies")):
    for f in glob.glob("pid.*"): os.remove(f)
    cmd = ["mpirun", "-np", "2", "sh", "-c", 'echo $$ > pid.$OMPI_COMM_WORLD_RANK; exec ' +
           " ".join([PR, "train", "net.pbtxt", "--threads", "1", *long, "--save", f"sig{sig}"])]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    while not os.path.exists("pid.1") or not open("pid.1").read().strip():
        assert time.time() - t0 < 30 and p.poll() is None, "ranks did not start"
        time.sleep(0.05)
    # rank 1 catches SIGTERM once it is training (before that the signal's
    # default ends it, as for any program starting up): wait for that, not a
    # fixed time, which a loaded machine can outlast
    pid = int(open("pid.1").read())
    while not catches(pid, 15):
        assert time.time() - t0 < 60 and p.poll() is None, "rank 1 did not start training"
        time.sleep(0.05)
    time.sleep(0.5)
    os.kill(pid, getattr(__import__("signal"), "SIG" + sig))
    out, _ = p.communicate(timeout=30)
    took = time.time() - t0
    print(f"a rank that {what}: exit {p.returncode} after {took:.1f} s")
    assert p.returncode != 0, out
    if sig == "TERM":  # every rank stops after the same step; rank 0 saves
        assert p.returncode == 143 and "interrupted by signal 15; checkpoint saved" in out, out
        assert os.path.isdir("sigTERM/latest"), out
    elif sig == "STOP":
        assert "did not complete within 2 s: another rank has died or hangs" in out, out
    else:
        assert "exited on signal 9" in out, out
# a failure aborts every rank: rank 0's log still ends with the failure
xn = x[:203].copy(); xn[150, 2] = np.nan  # a NaN row, unscanned: the loss goes NaN mid-run
np.save("xnan.npy", xn)
rc, out, _ = run(2, "--data", "x=xnan.npy", "--no-check-data", "--no-shuffle", "--iterations", "20", "--log", "fail.jsonl")
assert rc == 1, out
end = json.loads(open("fail.jsonl").readlines()[-1])
assert end["type"] == "end" and end["status"] == "failed" and "the loss" in end["message"], end
print("a failure under mpirun: the log ends with", end["status"], end["message"][:40])
print("mpi_train: all checks passed")

# python_module.py — python/paddle_run.py (ctypes over libpaddle-run.so) as
# installed (PREFIX/lib/python3/dist-packages beside PREFIX/lib, found with
# no environment variable) against the CLI on the same inputs, equal bits:
# infer (one fetch, two fetches, the default fetch) on the MLP of
# infer_mlp.py; one training step of fit_a_line from its initialisation and
# from a checkpoint, against `train --iterations 1 --no-shuffle`; errors
# raise paddle_run.Error with the C API's text (a bad net: file:line:col);
# loading the library starts no thread; four handles on four threads agree.
import glob, os, shutil, subprocess, sys
import numpy as np

PR, BUILD, ROOT = os.environ["PR"], os.environ["BUILD"], os.environ["ROOT"]
so = os.path.join(BUILD, "libpaddle-run.so.0")
if not os.path.exists(so) and "san" in os.path.basename(BUILD):
    print("skipped: no libpaddle-run.so in a sanitizer build")
    sys.exit(77)
site = os.path.abspath("prefix/lib/python3/dist-packages")
os.makedirs(site)
shutil.copy(os.path.join(ROOT, "python/paddle_run.py"), site)
shutil.copy(os.path.realpath(so), "prefix/lib/libpaddle-run.so.0")
os.environ.pop("PADDLE_RUN_LIB", None)
sys.path.insert(0, site)
import paddle_run


def threads():
    return int([l for l in open("/proc/self/status") if l.startswith("Threads:")][0].split()[1])


assert threads() == 1, "loading libpaddle-run.so started threads"  # the worker pool starts at the first run
assert paddle_run.version() == open(os.path.join(ROOT, "VERSION")).read().strip(), paddle_run.version()


def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    assert r.returncode == 0, (args, r.stdout + r.stderr)
    return r.stdout


def same(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, a.shape, b.dtype, b.shape)
    assert a.tobytes() == b.tobytes(), (what, a, b)


# ---- infer: the MLP, its parameters as .npy files ----
rng = np.random.default_rng(3)
open("mlp.pbtxt", "w").write("""
name: "mlp"
var { name: "x" shape: [-1, 5] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 7 } } attrs { key: "act" value { s: "relu" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax" inputs: "logits" outputs: "prob" }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
""")
os.makedirs("params")
for k, shape in {"w1": (5, 7), "b1": (7,), "w2": (7, 3), "b2": (3,)}.items():
    np.save(f"params/{k}.npy", rng.normal(size=shape).astype(np.float32))
x = rng.normal(size=(17, 5)).astype(np.float32)
np.save("x.npy", x)
run("infer", "mlp.pbtxt", "--params", "params", "--data", "x=x.npy", "--fetch", "prob=prob.npy", "--fetch",
    "h=h.npy", "--batch-size", "17")
net = paddle_run.Net("mlp.pbtxt", params="params")
same(net.infer(x=x, fetch="prob"), np.load("prob.npy"), "prob")
out = net.infer(x=x, fetch=["prob", "h"])
same(out["prob"], np.load("prob.npy"), "prob of two")
same(out["h"], np.load("h.npy"), "h of two")
same(net.infer(x=x), np.load("prob.npy"), "default fetch")  # the label unset: prob is what nothing reads
# a float64 input for a float32 variable is refused, not converted
try:
    net.infer(x=x.astype(np.float64))
    raise AssertionError("float64 input accepted")
except paddle_run.Error as e:
    assert str(e) == 'input "x": dtype float64 given, the net declares float32' and e.status == 2, str(e)
net.close()

# handles on threads of their own at once (ctypes lets go of the GIL in a call)
import threading
want, bad = np.load("prob.npy"), []


def worker():
    with paddle_run.Net("mlp.pbtxt", params="params") as n:
        for _ in range(30):
            if n.infer(x=x, fetch="prob").tobytes() != want.tobytes():
                bad.append(1)


ts = [threading.Thread(target=worker) for _ in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
assert not bad, f"{len(bad)} results differ across threads"

# ---- errors: the same text the C API (and the CLI) gives ----
open("bad.pbtxt", "w").write('var { name: "x" shape: [-1, 3] }\nop { type: "fcc" inputs: "x" outputs: "y" }\n')
try:
    paddle_run.Net("bad.pbtxt")
    raise AssertionError("a bad net opened")
except paddle_run.Error as e:
    msg = str(e)
r = subprocess.run([PR, "infer", "bad.pbtxt", "--fetch", "y"], capture_output=True, text=True)
assert msg.startswith('bad.pbtxt:2:6: op #0: unknown op type "fcc"'), msg
assert msg in r.stderr, (msg, r.stderr)
try:
    paddle_run.Net("mlp.pbtxt")  # no parameters
    raise AssertionError("opened without its parameters")
except paddle_run.Error as e:
    assert "give a parameter directory" in str(e), str(e)

# ---- one training step, from the initialisation and from a checkpoint ----
fit = os.path.join(ROOT, "netdescs/fit_a_line.pbtxt")
data = os.path.join(ROOT, "netdescs/data")
bx = np.load(f"{data}/fit_a_line_train_x.npy")[:32]  # the first batch, unshuffled
by = np.load(f"{data}/fit_a_line_train_y.npy")[:32]


def params_of(d):
    ck = os.path.realpath(os.path.join(d, "latest"))
    return {os.path.basename(f): np.load(f) for f in glob.glob(f"{ck}/*.npy")}


run("train", fit, "--iterations", "3", "--save", "ck")
for start in (None, "ck"):
    tag = "init" if start is None else "ck"
    run("train", fit, "--iterations", "1", "--no-shuffle", "--save", f"cli_{tag}", *(["--params", "ck"] if start else []))
    net = paddle_run.Net(fit, params=start, train=True)
    out = net.train_step(x=bx, y=by)
    assert list(out) == ["avg_loss"] and out["avg_loss"].size == 1, out
    net.save(f"api_{tag}")
    want, got = params_of(f"cli_{tag}"), params_of(f"api_{tag}")
    assert sorted(want) == sorted(got), (sorted(want), sorted(got))
    for k in want:
        same(got[k], want[k], f"{tag}: {k}")
    # the trained parameters infer as the CLI does from that checkpoint
    run("infer", fit, "--params", f"api_{tag}", "--data", f"x={data}/fit_a_line_test_x.npy", "--fetch", "y_predict=yp.npy")
    same(net.infer(x=np.load(f"{data}/fit_a_line_test_x.npy"), fetch="y_predict"), np.load("yp.npy"), "after a step")
    net.close()
print("ok")

# param_settings.py — a parameter's own settings (docs/netdesc.md, seed
# 002's Parameter): a frozen parameter (trainable: false) is bit-identical
# after training while the others change, gets no update op and no
# optimizer state in checkpoints, and a checkpoint saved before freezing
# resumes; lr_mult 0.5 gives exactly the update of half the lr (sgd,
# momentum, adam, adam's row-sparse path, a schedule), and sgd's first step
# matches the update computed here in numpy; decay_mult 0 turns weight decay
# off for that parameter; gradcheck checks the unfrozen parameters.
import glob, os, re, subprocess
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(3)
N, D, H, C = 32, 5, 6, 3
y = rng.integers(0, C, size=N)
x = (rng.normal(size=(C, D))[y] * 0.8 + rng.normal(size=(N, D))).astype(np.float32)
np.save("x.npy", x)
np.save("y.npy", y.reshape(N, 1).astype(np.int64))
ids = rng.integers(0, 10, size=(N, 2)).astype(np.int64)
np.save("ids.npy", ids)

MLP = """
name: "ps"
var { name: "x" shape: [-1, 5] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
%(vars)s
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 6 } } attrs { key: "act" value { s: "tanh" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 8 seed: 5 log_every: 1 shuffle: false
        optimizer { type: "%(opt)s" lr: %(lr)s weight_decay: %(wd)s %(sched)s }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
"""

# one layer: its gradients do not depend on another parameter's update, so
# lr_mult m on every parameter must equal lr * m, bit for bit, at every step
LINEAR = """
name: "lin"
var { name: "x" shape: [-1, 5] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
%(vars)s
op { type: "fc" inputs: ["x", "w", "b"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: %(batch)s seed: 5 log_every: 1 shuffle: false
        optimizer { type: "%(opt)s" lr: %(lr)s weight_decay: %(wd)s %(sched)s }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
"""

EMB = """
name: "emb"
var { name: "ids" shape: [-1, 2] dtype: INT64 }
var { name: "y" shape: [-1, 1] dtype: INT64 }
%(vars)s
op { type: "embedding" inputs: ["ids", "table"] outputs: "e" attrs { key: "dim" value { i: 4 } } attrs { key: "vocab_size" value { i: 10 } } }
op { type: "reshape" inputs: "e" outputs: "ef" attrs { key: "shape" value { ints: [-1, 8] } } }
op { type: "fc" inputs: ["ef", "w", "b"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 8 seed: 5 log_every: 1 shuffle: false
        optimizer { type: "%(opt)s" lr: %(lr)s weight_decay: %(wd)s %(sched)s }
        data { var: "ids" file: "ids.npy" } data { var: "y" file: "y.npy" } }
"""


def run(*args, ok=True):
    r = subprocess.run([PR, *args], capture_output=True, text=True, timeout=120)
    assert (r.returncode == 0) == ok, (args, r.returncode, r.stdout + r.stderr)
    return r.stdout + r.stderr


def net(name, tmpl, vars="", opt="sgd", lr=0.1, wd=0, sched="", batch=8):
    open(name, "w").write(tmpl % dict(vars=vars, opt=opt, lr=lr, wd=wd, sched=sched, batch=batch))
    return name


def ckpt(d):
    ck = os.path.realpath(os.path.join(d, "latest"))
    return {os.path.basename(f)[:-4]: np.load(f) for f in sorted(glob.glob(ck + "/*.npy"))}


def train(pb, out, *args):
    if "--resume" not in args:  # a fresh directory per run
        k = 0
        while os.path.exists(out + (str(k) if k else "")):
            k += 1
        out += str(k) if k else ""
    run("train", pb, "--threads", "1", "--save", out, *args)
    return ckpt(out)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ---- (a) frozen: the first layer does not move, the second does; no state
FROZEN = 'var { name: "w1" trainable: false } var { name: "b1" trainable: false }'
for opt in ("sgd", "momentum", "adam"):
    init = train(net("f0.pbtxt", MLP, opt=opt), "f0_%s" % opt, "--iterations", "0")
    got = train(net("f.pbtxt", MLP, vars=FROZEN, opt=opt), "f_%s" % opt, "--iterations", "8")
    for p in ("w1", "b1"):
        assert same(got[p], init[p]), (opt, p, "a frozen parameter changed")
    for p in ("w2", "b2"):
        assert not np.array_equal(got[p], init[p]), (opt, p, "a trained parameter did not change")
    state = sorted(k for k in got if "@" in k and not k.startswith("@"))
    assert not [k for k in state if k.split("@")[0] in ("w1", "b1")], (opt, state)
    if opt != "sgd":
        assert [k for k in state if k.startswith("w2@")], (opt, state)
desc = run("desc", "f.pbtxt", "--optimizer", "adam")
assert "trainable: false" in desc, desc
assert '"w1@GRAD"' not in desc and '"w1@MOMENT1"' not in desc, desc
assert '"h@GRAD"' not in desc, "no layer before h wants a gradient: none flows into it"
assert '"w2@MOMENT1"' in desc, desc
chk = run("check", "f.pbtxt")
assert "trainable: 21 in 2 variables; frozen: 36 in 2 variables" in chk, chk

# a gradient still flows through a frozen layer to the trainable one before it
MID = 'var { name: "w2" trainable: false } var { name: "b2" trainable: false }'
init = train(net("m0.pbtxt", MLP), "m0", "--iterations", "0")
got = train(net("m.pbtxt", MLP, vars=MID), "m", "--iterations", "4")
assert same(got["w2"], init["w2"]) and not np.array_equal(got["w1"], init["w1"]), "frozen w2, trained w1"

# a checkpoint saved before freezing resumes: its moments of w1 are left unused
train(net("r.pbtxt", MLP, opt="adam"), "r", "--iterations", "4")
before = ckpt("r")
got = train(net("rf.pbtxt", MLP, vars=FROZEN, opt="adam"), "r", "--iterations", "8", "--resume", "r")
assert same(got["w1"], before["w1"]) and not np.array_equal(got["w2"], before["w2"])
assert "w1@MOMENT1" not in got, sorted(got)

# ---- (b) lr_mult: exactly the update of half the lr
HALF = 'var { name: "w" lr_mult: 0.5 } var { name: "b" lr_mult: 0.5 }'
for opt, sched in (("sgd", ""), ("momentum", ""), ("adam", ""),
                   ("momentum", 'schedule { type: "step" step_size: 2 gamma: 0.5 }')):
    a = train(net("h.pbtxt", LINEAR, vars=HALF, opt=opt, sched=sched), "h", "--iterations", "6")
    b = train(net("h2.pbtxt", LINEAR, opt=opt, lr=0.05, sched=sched), "h2", "--iterations", "6")
    for p in ("w", "b"):
        assert same(a[p], b[p]), (opt, sched, p, "lr_mult 0.5 is not lr / 2")
# adam's row-sparse path (an embedding table's lazy update)
a = train(net("e.pbtxt", EMB, vars='var { name: "table" lr_mult: 0.5 } var { name: "w" lr_mult: 0.5 } '
              'var { name: "b" lr_mult: 0.5 }', opt="adam"), "e", "--iterations", "6")
b = train(net("e2.pbtxt", EMB, opt="adam", lr=0.05), "e2", "--iterations", "6")
assert "table@GRAD@ROWS" in run("desc", "e.pbtxt", "--optimizer", "adam"), "the row-sparse path"
for p in ("table", "w", "b"):
    assert same(a[p], b[p]), ("adam rows", p)
# only its own parameter: lr_mult on w alone leaves b's update at the full lr
a = train(net("w.pbtxt", LINEAR, vars='var { name: "w" lr_mult: 0.5 }', batch=32), "w", "--iterations", "1")
full = train(net("w2.pbtxt", LINEAR, batch=32), "wf", "--iterations", "1")
half = train(net("w3.pbtxt", LINEAR, lr=0.05, batch=32), "wh", "--iterations", "1")
assert same(a["w"], half["w"]) and same(a["b"], full["b"]) and not same(a["w"], full["w"])
# against sgd computed here: one step on the whole batch from the initial values
init = train(net("w0.pbtxt", LINEAR, batch=32), "w0", "--iterations", "0")
w0, b0 = init["w"].astype(np.float64), init["b"].astype(np.float64)
z = x.astype(np.float64) @ w0 + b0
sm = np.exp(z - z.max(1, keepdims=True))
sm /= sm.sum(1, keepdims=True)
dz = (sm - np.eye(C)[y]) / N
w_np, b_np = w0 - 0.05 * (x.T @ dz), b0 - 0.1 * dz.sum(0)
assert np.allclose(a["w"], w_np, rtol=0, atol=2e-7), np.abs(a["w"] - w_np).max()
assert np.allclose(a["b"], b_np, rtol=0, atol=2e-7), np.abs(a["b"] - b_np).max()

# ---- (c) decay_mult 0: no weight decay on w, b keeps it
b = train(net("d2.pbtxt", LINEAR, wd=0), "d2", "--iterations", "1")
c = train(net("d3.pbtxt", LINEAR, wd=0.1), "d3", "--iterations", "1")
a1 = train(net("d4.pbtxt", LINEAR, vars='var { name: "w" decay_mult: 0 }', wd=0.1), "d4", "--iterations", "1")
assert same(a1["w"], b["w"]) and same(a1["b"], c["b"]) and not same(c["w"], b["w"])
assert re.search(r'key: "weight_decay"\s*value {\s*f: 0\s*}', run("desc", "d4.pbtxt", "--optimizer", "sgd"))
for opt in ("momentum", "adam"):
    a = train(net("d5.pbtxt", LINEAR, vars='var { name: "w" decay_mult: 0 } var { name: "b" decay_mult: 0 }',
                  opt=opt, wd=0.1), "d5", "--iterations", "5")
    b = train(net("d6.pbtxt", LINEAR, opt=opt, wd=0), "d6", "--iterations", "5")
    assert same(a["w"], b["w"]) and same(a["b"], b["b"]), opt

# ---- (d) gradcheck: the unfrozen parameters only, and they pass
out = run("gradcheck", "f.pbtxt")
assert "checked 2 parameters" in out, out
out = run("gradcheck", net("g.pbtxt", MLP, vars='var { name: "w1" lr_mult: 2 decay_mult: 0.5 }'))
assert "checked 4 parameters" in out, out
print("ok")

# fused_rnn.py — the fused recurrent ops lstm, gru and rnn against references:
#   1. `infer` in float64 matches a NumPy loop written from ONNX's formulas on
#      ONNX-layout weights (iofc / zrh) converted with the permutation that
#      docs/netdesc.md gives, to 1e-12: lstm with peepholes, clip, initial
#      states, 2 layers, bidirectional and reverse; gru with
#      linear_before_reset 0 and 1; rnn tanh and relu; uneven lengths
#      (unsorted, and sorted for the shrinking batch); float32 to 1e-5;
#   2. `gradcheck` in float64 passes on every element of every parameter of
#      small nets (1 and 2 layers, each direction, lengths, initial states and
#      X computed from parameters so that their gradients are checked too,
#      peepholes, both GRU variants, relu RNN);
#   3. (PyTorch installed) outputs, final states and the gradients of X, the
#      initial states and every weight of torch.nn.LSTM / GRU / RNN, 2 layers,
#      bidirectional, packed uneven lengths, initial states, agree to 1e-9
#      in float64, the weights copied as docs/netdesc.md says;
#   4. the final state written into the very variable the initial state is
#      read from gives the same values as into a variable of its own;
#   5. training on 2 threads gives the same bytes twice, and the values of 1 thread;
#   6. float32's gradients (its packed and vectorised steps) equal float64's
#      to 1e-4.
import os, subprocess, sys
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(21)


def run(*args, ok=True):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, " ".join(args) + "\n" + r.stdout + r.stderr
    return r.returncode, r.stdout + r.stderr


# ---- the reference: ONNX's formulas, ONNX's gate layouts ------------------------
GATES = {"lstm": 4, "gru": 3, "rnn": 1}
# internal gate block j is ONNX's block PERM[j]: lstm i f g o <- i o f c, gru r z n <- z r h
PERM = {"lstm": [0, 2, 3, 1], "gru": [1, 0, 2], "rnn": [0]}


def sig(a):
    return 1 / (1 + np.exp(-a))


def onnx_step(kind, x, h, c, w, r, wb, rb, p, clip, variant):
    """One step on ONNX-layout weights (rows in iofc / zrh order)."""
    cl = (lambda a: np.clip(a, -clip, clip)) if clip else (lambda a: a)
    H = len(h)
    if kind == "lstm":
        ai, ao, af, ac = np.split(w @ x + wb + r @ h + rb, 4)
        if p is not None:
            pi, po, pf = np.split(p, 3)
            ai, af = ai + pi * c, af + pf * c
        i, f, g = sig(cl(ai)), sig(cl(af)), np.tanh(cl(ac))
        c = f * c + i * g
        if p is not None:
            ao = ao + po * c
        return sig(cl(ao)) * np.tanh(c), c
    if kind == "rnn":
        a = cl(w @ x + wb + r @ h + rb)
        return (np.maximum(a, 0) if variant else np.tanh(a)), c
    xw = w @ x + wb
    z = sig(cl(xw[:H] + r[:H] @ h + rb[:H]))
    rr = sig(cl(xw[H:2 * H] + r[H:2 * H] @ h + rb[H:2 * H]))
    if variant:
        n = np.tanh(cl(xw[2 * H:] + rr * (r[2 * H:] @ h + rb[2 * H:])))
    else:
        n = np.tanh(cl(xw[2 * H:] + r[2 * H:] @ (rr * h) + rb[2 * H:]))
    return (1 - z) * n + z * h, c


def reference(kind, x, lens, onnx, H, L, dirs, reverse, h0, c0, clip=0.0, variant=0):
    """Y, HT, CT of the whole op; onnx[l] = (W [dirs, GH, in], R [dirs, GH, H], B [dirs, 2GH], P or None)."""
    Bn, T, _ = x.shape
    inp = x
    HT, CT = np.zeros((L * dirs, Bn, H)), np.zeros((L * dirs, Bn, H))
    for l in range(L):
        W, R, Bb, P = onnx[l]
        out = np.zeros((Bn, T, dirs * H))
        for d in range(dirs):
            k = l * dirs + d
            GH = W.shape[1]
            for b in range(Bn):
                h, c = h0[k, b].copy(), c0[k, b].copy()
                steps = range(lens[b] - 1, -1, -1) if reverse or d == 1 else range(lens[b])
                for t in steps:
                    h, c = onnx_step(kind, inp[b, t], h, c, W[d], R[d], Bb[d, :GH], Bb[d, GH:],
                                     None if P is None else P[d], clip, variant)
                    out[b, t, d * H:(d + 1) * H] = h
                HT[k, b], CT[k, b] = h, c
        inp = out
    return inp, HT, CT


def to_ours(kind, a, H, axis):
    """Reorders the gate blocks of an ONNX-layout array along axis."""
    blocks = np.split(a, GATES[kind], axis=axis)
    return np.concatenate([blocks[j] for j in PERM[kind]], axis=axis)


def random_onnx(kind, I, H, L, dirs, peep):
    G = GATES[kind]
    layers = []
    for l in range(L):
        nin = I if l == 0 else dirs * H
        W = rng.normal(size=(dirs, G * H, nin)) * 0.5
        R = rng.normal(size=(dirs, G * H, H)) * 0.5
        Bb = rng.normal(size=(dirs, 2 * G * H)) * 0.3
        P = rng.normal(size=(dirs, 3 * H)) * 0.5 if peep else None
        layers.append((W, R, Bb, P))
    return layers


def save_ours(kind, onnx, H, L, pdir, dtype):
    """Our parameters: W (layer 0), WL (layers 1..), R, B ([Wb | Rb], each reordered), P (ONNX's iof)."""
    os.makedirs(pdir, exist_ok=True)
    W = to_ours(kind, onnx[0][0], H, 1)
    R = np.concatenate([to_ours(kind, o[1], H, 1) for o in onnx])
    Bb = np.concatenate([np.concatenate([to_ours(kind, o[2][:, :o[2].shape[1] // 2], H, 1),
                                         to_ours(kind, o[2][:, o[2].shape[1] // 2:], H, 1)], axis=1) for o in onnx])
    np.save(f"{pdir}/w.npy", W.astype(dtype)), np.save(f"{pdir}/r.npy", R.astype(dtype))
    np.save(f"{pdir}/b.npy", Bb.astype(dtype))
    if L > 1:
        np.save(f"{pdir}/wl.npy", np.concatenate([to_ours(kind, o[0], H, 1) for o in onnx[1:]]).astype(dtype))
    if onnx[0][3] is not None:
        np.save(f"{pdir}/p.npy", np.concatenate([o[3] for o in onnx]).astype(dtype))


def op_text(kind, H, L, direction, peep, clip, variant, h0, c0):
    ins = ["x", "w", "r", "b", "len", "h0" if h0 else ""]
    outs = ["y", "hT"]
    if kind == "lstm":
        ins += ["c0" if c0 else "", "p" if peep else ""]
        outs.append("cT")
    ins.append("wl" if L > 1 else "")
    while ins[-1] == "":
        ins.pop()
    a = (f'attrs {{ key: "hidden_size" value {{ i: {H} }} }} attrs {{ key: "num_layers" value {{ i: {L} }} }} '
         f'attrs {{ key: "direction" value {{ s: "{direction}" }} }}')
    if clip:
        a += f' attrs {{ key: "clip" value {{ f: {clip} }} }}'
    if kind == "gru":
        a += f' attrs {{ key: "linear_before_reset" value {{ i: {variant} }} }}'
    if kind == "rnn":
        a += f' attrs {{ key: "activation" value {{ s: "{"relu" if variant else "tanh"}" }} }}'
    q = lambda v: ", ".join(f'"{n}"' for n in v)
    return f'op {{ type: "{kind}" inputs: [{q(ins)}] outputs: [{q(outs)}] {a} }}\n'


# ---- 1. forward against the NumPy reference ---------------------------------------
Bn, T, I, H = 5, 6, 3, 4
CASES = [  # kind, layers, direction, peepholes, clip, variant, initial states, lengths
    ("lstm", 1, "forward", False, 0, 0, False, [6, 3, 1, 5, 2]),
    ("lstm", 2, "bidirectional", True, 0, 0, True, [6, 3, 1, 5, 2]),
    ("lstm", 1, "reverse", True, 1.5, 0, True, [6, 6, 4, 2, 1]),
    ("gru", 2, "bidirectional", False, 0, 0, True, [2, 6, 1, 5, 3]),
    ("gru", 1, "reverse", False, 0, 1, True, [6, 5, 5, 2, 1]),
    ("gru", 2, "forward", False, 1.0, 1, False, [6, 3, 1, 5, 2]),
    ("rnn", 2, "bidirectional", False, 0, 0, True, [6, 3, 1, 5, 2]),
    ("rnn", 1, "forward", False, 0.8, 1, True, [6, 6, 4, 2, 1]),
]
for kind, L, direction, peep, clip, variant, states, lens in CASES:
    dirs = 2 if direction == "bidirectional" else 1
    lens = np.array(lens, np.int64)
    onnx = random_onnx(kind, I, H, L, dirs, peep)
    x = rng.normal(size=(Bn, T, I))
    h0 = rng.normal(size=(L * dirs, Bn, H)) if states else np.zeros((L * dirs, Bn, H))
    c0 = rng.normal(size=(L * dirs, Bn, H)) if states else np.zeros((L * dirs, Bn, H))
    Y, HT, CT = reference(kind, x, lens, onnx, H, L, dirs, direction == "reverse", h0, c0, clip, variant)
    for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        DT = "FLOAT64" if dt == np.float64 else "FLOAT32"
        net = (f'var {{ name: "x" shape: [-1, {T}, {I}] dtype: {DT} }}\n'
               'var { name: "len" shape: [-1] dtype: INT64 }\n')
        if states:  # [layers*dirs, batch, H]: parameters here (data is split along its first dim)
            net += f'var {{ name: "h0" kind: PARAM shape: [{L * dirs}, {Bn}, {H}] dtype: {DT} }}\n'
            net += f'var {{ name: "c0" kind: PARAM shape: [{L * dirs}, {Bn}, {H}] dtype: {DT} }}\n' if kind == "lstm" else ""
        net += op_text(kind, H, L, direction, peep, clip, variant, states, states)
        open("fwd.pbtxt", "w").write(net)
        subprocess.run(["rm", "-rf", "pf"])
        save_ours(kind, onnx, H, L, "pf", dt)
        np.save("x.npy", x.astype(dt)), np.save("len.npy", lens)
        if states:
            np.save("pf/h0.npy", h0.astype(dt))
            if kind == "lstm":
                np.save("pf/c0.npy", c0.astype(dt))
        args = ["infer", "fwd.pbtxt", "--params", "pf", "--data", "x=x.npy", "--data", "len=len.npy",
                "--fetch", "y=y.npy", "--fetch", "hT=hT.npy"]
        if kind == "lstm":
            args += ["--fetch", "cT=cT.npy"]
        rc, out = run(*args)
        got = [np.load("y.npy"), np.load("hT.npy")] + ([np.load("cT.npy")] if kind == "lstm" else [])
        for name, g, want in zip(("Y", "HT", "CT"), got, (Y, HT, CT)):
            assert g.shape == want.shape, (kind, name, g.shape, want.shape)
            err = np.max(np.abs(g - want) / (1 + np.abs(want)))
            assert err < tol, f"{kind} L={L} {direction} {DT}: {name} off by {err} against NumPy"
    print(f"{kind} {L} layer(s) {direction}" + (" peepholes" if peep else "") + (f" clip {clip}" if clip else "")
          + (f" variant {variant}" if kind != "lstm" else "") + (" initial states" if states else "")
          + ": matches NumPy (ONNX formulas and layout) to 1e-12 in float64, 1e-5 in float32")

# ---- 2. gradients against finite differences (float64) ----------------------------
# X, the initial states and weights of the outputs are parameters here, so
# that gradcheck checks dX, dH0 and dC0 element by element too.
GB, GT, GI, GH_ = 4, 4, 3, 3
np.save("glen.npy", np.array([4, 2, 3, 1], np.int64))
np.save("gsorted.npy", np.array([4, 3, 3, 1], np.int64))
GRAD_CASES = [  # name, kind, layers, direction, peepholes, clip, variant, initial states, lengths file
    ("lstm1", "lstm", 1, "forward", False, 0, 0, True, "glen"),
    ("lstm2bi", "lstm", 2, "bidirectional", True, 0, 0, True, "glen"),
    ("lstm_rev", "lstm", 1, "reverse", True, 0, 0, False, "gsorted"),
    ("lstm2", "lstm", 2, "forward", False, 0, 0, False, "gsorted"),
    ("lstm_clip", "lstm", 1, "forward", True, 0.7, 0, True, "glen"),
    ("gru0", "gru", 2, "bidirectional", False, 0, 0, True, "glen"),
    ("gru1", "gru", 1, "reverse", False, 0, 1, True, "glen"),
    ("gru1_2", "gru", 2, "forward", False, 0, 1, False, "gsorted"),
    ("rnn_tanh", "rnn", 2, "bidirectional", False, 0, 0, True, "glen"),
    ("rnn_relu", "rnn", 1, "reverse", False, 0, 1, True, "gsorted"),
    # the loss from the final states alone: no gradient reaches Y
    ("lstm2_noy", "lstm", 2, "bidirectional", False, 0, 0, True, "glen"),
    ("gru1_noy", "gru", 1, "forward", False, 0, 1, True, "gsorted"),
]
for name, kind, L, direction, peep, clip, variant, states, lf in GRAD_CASES:
    dirs = 2 if direction == "bidirectional" else 1
    k = L * dirs
    uni = 'init { type: "uniform" min: -0.6 max: 0.6 }'
    net = (f'var {{ name: "x" kind: PARAM shape: [{GB}, {GT}, {GI}] init {{ type: "gaussian" }} }}\n'
           'var { name: "len" shape: [-1] dtype: INT64 }\n'
           f'var {{ name: "b" kind: PARAM {uni} }}\n' + (f'var {{ name: "p" kind: PARAM {uni} }}\n' if peep else '')
           + ("" if name.endswith("_noy") else
              f'var {{ name: "gy" kind: PARAM shape: [{GT}, {dirs * GH_}] init {{ type: "gaussian" }} }}\n')
           + f'var {{ name: "gh" kind: PARAM shape: [{k}, {GB}, {GH_}] init {{ type: "gaussian" }} }}\n')
    if states:
        net += f'var {{ name: "h0" kind: PARAM shape: [{k}, {GB}, {GH_}] {uni} }}\n'
        net += f'var {{ name: "c0" kind: PARAM shape: [{k}, {GB}, {GH_}] {uni} }}\n' if kind == "lstm" else ""
    net += op_text(kind, GH_, L, direction, peep, clip, variant, states, states)
    noy = name.endswith("_noy")
    if not noy:
        net += ('op { type: "broadcast_mul" inputs: ["y", "gy"] outputs: "wy" }\n'
                'op { type: "mean" inputs: "wy" outputs: "l1" }\n')
    net += ('op { type: "broadcast_mul" inputs: ["hT", "gh"] outputs: "wh" }\n'
            'op { type: "mean" inputs: "wh" outputs: "l2" }\n')
    terms = ([] if noy else ["l1"]) + ["l2"]
    if kind == "lstm":
        net += ('op { type: "broadcast_mul" inputs: ["cT", "cT"] outputs: "wc" }\n'
                'op { type: "mean" inputs: "wc" outputs: "l3" }\n')
        terms.append("l3")
    net += 'op { type: "sum" inputs: [' + ", ".join(f'"{t}"' for t in terms) + '] outputs: "avg_loss" }\n'
    net += (f'train {{ loss: "avg_loss" batch_size: {GB} epochs: 1 seed: 5 optimizer {{ type: "sgd" lr: 0.1 }}\n'
            f'  data {{ var: "len" file: "{lf}.npy" }} }}\n')
    open(f"{name}.pbtxt", "w").write(net)
    rc, out = run("gradcheck", f"{name}.pbtxt", "--elements", "0", "--rows", str(GB), "--tol", "1e-6")
    lines = out.strip().splitlines()
    print(f"gradcheck {name}: {lines[0]}; {lines[-1][:110]}")

# ---- 4. HT written into the very variable H0 is read from ---------------------------
# (what truncated BPTT does with a carried state): the same values as with
# an output of its own; the op reads every initial state before it writes.
x = rng.normal(size=(3, 4, 2))
np.save("ax.npy", x), np.save("az.npy", rng.normal(size=(3, 2)))
subprocess.run(["rm", "-rf", "ap"])
os.makedirs("ap")
for n, shape in (("w", (1, 12, 2)), ("r", (1, 12, 3)), ("b", (1, 24)), ("zw", (2, 3))):
    np.save(f"ap/{n}.npy", rng.normal(size=shape))
got = {}
for ht in ("h0", "hT"):
    open("alias.pbtxt", "w").write(
        'var { name: "x" shape: [-1, 4, 2] dtype: FLOAT64 }\nvar { name: "z" shape: [-1, 2] dtype: FLOAT64 }\n'
        'op { type: "fc" inputs: ["z", "zw"] outputs: "h00" attrs { key: "size" value { i: 3 } } }\n'
        'op { type: "reshape" inputs: "h00" outputs: "h0" attrs { key: "shape" value { ints: [1, -1, 3] } } }\n'
        f'op {{ type: "lstm" inputs: ["x", "w", "r", "b", "", "h0"] outputs: ["y", "{ht}"] '
        'attrs { key: "hidden_size" value { i: 3 } } }\n'
        f'op {{ type: "identity" inputs: "{ht}" outputs: "out" }}\n')
    run("infer", "alias.pbtxt", "--params", "ap", "--data", "x=ax.npy", "--data", "z=az.npy", "--fetch", f"out=a_{ht}.npy")
    got[ht] = np.load(f"a_{ht}.npy")
assert np.array_equal(got["h0"], got["hT"]), np.abs(got["h0"] - got["hT"]).max()
print("HT written into the variable read as H0: the same final states as into a variable of its own")

# ---- 5. threads: the gate passes split by rows change nothing -------------------------
# (two runs on 2 threads save the same bytes; 1 thread the same values up to
# the rounding of BLIS's products, whose paths depend on a part's size).
# On 2 threads the packed backward runs the whole sequence on each part's
# rows (unsorted lengths: frozen rows; all lengths full), or a step at a
# time (sorted lengths, whose batch shrinks; peepholes, one part).
np.save("bx.npy", rng.normal(size=(64, 5, 8)).astype(np.float32))
np.save("blen.npy", rng.integers(1, 6, size=64))
np.save("blen_sorted.npy", np.sort(rng.integers(1, 6, size=64))[::-1].copy())
np.save("blen_full.npy", np.full(64, 5))
for kind, variant, peep, lens in (("lstm", 0, False, "blen"), ("gru", 0, False, "blen"), ("gru", 1, False, "blen"),
                                  ("rnn", 0, False, "blen"), ("lstm", 0, False, "blen_sorted"),
                                  ("gru", 1, False, "blen_sorted"), ("lstm", 0, True, "blen"),
                                  ("lstm", 0, False, "blen_full"), ("gru", 1, False, "blen_full")):
    H = 64 if kind == "lstm" else 96 if kind == "gru" else 200  # rows of 8192 / (G*H) or fewer a part: 2 parts
    open("thr.pbtxt", "w").write('var { name: "x" shape: [-1, 5, 8] }\nvar { name: "len" shape: [-1] dtype: INT64 }\n'
                                 + op_text(kind, H, 1, "bidirectional", peep, 0, variant, False, False)
                                 + 'op { type: "mean" inputs: "y" outputs: "avg_loss" }\n'
                                 'train { loss: "avg_loss" batch_size: 64 epochs: 2 seed: 1 shuffle: false '
                                 'optimizer { type: "sgd" lr: 0.5 } data { var: "x" file: "bx.npy" } '
                                 f'data {{ var: "len" file: "{lens}.npy" }} }}\n')
    for t, d in (("1", "thr1"), ("2", "thr2"), ("2", "thr2b")):
        subprocess.run(["rm", "-rf", d])
        run("train", "thr.pbtxt", "--threads", t, "--save", d)
    step = sorted(d for d in os.listdir("thr1") if d.startswith("step-"))[-1]
    for f in sorted(os.listdir(f"thr1/{step}")):
        if f.endswith(".npy"):
            assert open(f"thr2/{step}/{f}", "rb").read() == open(f"thr2b/{step}/{f}", "rb").read(), (kind, f)
            a, b = np.load(f"thr1/{step}/{f}"), np.load(f"thr2/{step}/{f}")
            assert np.allclose(a, b, rtol=1e-5, atol=1e-6), (kind, f, np.abs(a - b).max())
print("lstm, gru (both variants), rnn, lengths unsorted, sorted and full, peepholes: two training steps on "
      "2 threads save the same bytes twice, on 1 thread the same values")

# ---- 5b. the gate passes' vector widths: the same bits ----------------------------------
# On an AVX-512 CPU the float gate passes take 16 units at a time, then 8,
# then the rest one by one (ops/rnn_simd.h); PADDLE_RUN_AVX512=off leaves
# out the 16, and the packed products' 4 x 32 tiles of a panel of 4 rows
# (pd_rnn_products2; batch 64 = 10 x 6 + 4, hidden 48: blocks of 16, two
# paired and one alone). Each lane runs the same operations, so the bytes
# saved are the same: hidden sizes with every kind of tail (29 = 16 + 8 +
# 5, 40 = 16 + 16 + 8), with and without a clip that bounds gates.
avx512 = "avx512f" in open("/proc/cpuinfo").read()
for kind, variant, H, clip in (("lstm", 0, 29, 0), ("lstm", 0, 40, 0.5), ("gru", 1, 29, 0.5), ("gru", 0, 40, 0),
                               ("gru", 1, 40, 0), ("lstm", 0, 48, 0), ("gru", 1, 48, 0.5)):
    open("wid.pbtxt", "w").write('var { name: "x" shape: [-1, 5, 8] }\nvar { name: "len" shape: [-1] dtype: INT64 }\n'
                                 + op_text(kind, H, 1, "bidirectional", False, clip, variant, False, False)
                                 + 'op { type: "mean" inputs: "y" outputs: "avg_loss" }\n'
                                 'train { loss: "avg_loss" batch_size: 64 epochs: 2 seed: 1 shuffle: false '
                                 'optimizer { type: "sgd" lr: 0.5 } data { var: "x" file: "bx.npy" } '
                                 'data { var: "len" file: "blen.npy" } }\n')
    saved = {}
    for setting in ("on", "off"):
        subprocess.run(["rm", "-rf", "wid_" + setting])
        r = subprocess.run([PR, "train", "wid.pbtxt", "--threads", "1", "--save", "wid_" + setting],
                           capture_output=True, text=True, env=dict(os.environ, PADDLE_RUN_AVX512=setting))
        assert r.returncode == 0, r.stdout + r.stderr
        step = sorted(d for d in os.listdir("wid_" + setting) if d.startswith("step-"))[-1]
        saved[setting] = {f: open(f"wid_{setting}/{step}/{f}", "rb").read()
                          for f in sorted(os.listdir(f"wid_{setting}/{step}")) if f.endswith(".npy")}
    assert saved["on"].keys() == saved["off"].keys() and len(saved["on"]) >= 3, saved["on"].keys()
    for f in saved["on"]:
        assert saved["on"][f] == saved["off"][f], (kind, variant, H, clip, f)
print("lstm and gru, hidden 29, 40 and 48, clip or none: the same bytes with PADDLE_RUN_AVX512=off"
      + ("" if avx512 else " (no AVX-512 here: both runs took the 8-wide passes)"))

# ---- 6. float32's gradients against float64's ------------------------------------------
# The gradcheck above runs in float64; float32 with 4 steps or more takes
# other code: R packed once a call with AVX2 gate passes (lstm, gru with
# linear_before_reset 1), or BLIS products around AVX2 gate passes (gru 0).
# One SGD step of lr 1000 on the same values in both types: each
# parameter's change (-1000 x its gradient, large next to its value, so
# float32's rounding of the new value stays ~1e-7 of it) agrees to 1e-4 of
# its largest element. Unsorted lengths, both directions, initial states,
# a hidden size with vector tails (19) and a part panel of rows (7).
B6, T6, I6, H6 = 7, 6, 5, 19
np.save("len6.npy", np.array([6, 2, 5, 6, 1, 3, 4], np.int64))
for kind, variant in (("lstm", 0), ("gru", 0), ("gru", 1), ("rnn", 0)):
    onnx = random_onnx(kind, I6, H6, 1, 2, False)
    x, h0, c0 = rng.normal(size=(B6, T6, I6)), rng.normal(size=(2, B6, H6)), rng.normal(size=(2, B6, H6))
    delta = {}
    for dt, DT in ((np.float32, "FLOAT32"), (np.float64, "FLOAT64")):
        net = (f'var {{ name: "x" shape: [-1, {T6}, {I6}] dtype: {DT} }}\n'
               'var { name: "len" shape: [-1] dtype: INT64 }\n'
               f'var {{ name: "h0" kind: PARAM shape: [2, {B6}, {H6}] dtype: {DT} }}\n'
               + (f'var {{ name: "c0" kind: PARAM shape: [2, {B6}, {H6}] dtype: {DT} }}\n' if kind == "lstm" else "")
               + op_text(kind, H6, 1, "bidirectional", False, 0, variant, True, kind == "lstm")
               + 'op { type: "mean" inputs: "y" outputs: "l1" }\n'
               'op { type: "mean" inputs: "hT" outputs: "l2" }\n'
               'op { type: "sum" inputs: ["l1", "l2"] outputs: "avg_loss" }\n'
               f'train {{ loss: "avg_loss" batch_size: {B6} epochs: 1 seed: 1 shuffle: false '
               'optimizer { type: "sgd" lr: 1000 } '
               f'data {{ var: "x" file: "x6_{DT}.npy" }} data {{ var: "len" file: "len6.npy" }} }}\n')
        open("f6.pbtxt", "w").write(net)
        subprocess.run(["rm", "-rf", "p6", "s6"])
        save_ours(kind, onnx, H6, 1, "p6", dt)
        np.save(f"x6_{DT}.npy", x.astype(dt)), np.save("p6/h0.npy", h0.astype(dt))
        if kind == "lstm":
            np.save("p6/c0.npy", c0.astype(dt))
        run("train", "f6.pbtxt", "--params", "p6", "--iterations", "1", "--save", "s6")
        names = [f[:-4] for f in os.listdir("p6") if f.endswith(".npy")]
        delta[DT] = {n: np.load(f"s6/latest/{n}.npy").astype(np.float64) - np.load(f"p6/{n}.npy") for n in names}
    worst = 0.0
    for n, d64 in delta["FLOAT64"].items():
        err = np.abs(delta["FLOAT32"][n] - d64).max() / np.abs(d64).max()
        assert err <= 1e-4, f"{kind} variant {variant}: {n}'s float32 gradient off by {err:.2e} of its largest element"
        worst = max(worst, err)
    print(f"{kind}" + (f" variant {variant}" if kind == "gru" else "") + ", bidirectional, unsorted lengths: "
          f"float32's gradients of {', '.join(sorted(delta['FLOAT64']))} agree with float64's (worst {worst:.1e})")

# ---- 3. against PyTorch in float64 ---------------------------------------------
try:
    import torch
except ImportError:
    torch = None
if torch is None:
    print("PyTorch is not installed (python3-torch): part 3 (PyTorch parity) skipped, NumPy checks only")
    sys.exit(0)
torch.manual_seed(3)
PB, PT, PI, PH, PL = 5, 7, 4, 3, 2
plens = np.array([7, 3, 5, 1, 6], np.int64)
np.save("plen.npy", plens)
for kind, make in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU), ("rnn", torch.nn.RNN)):
    mod = make(PI, PH, num_layers=PL, bidirectional=True, batch_first=True, dtype=torch.float64)
    k = PL * 2
    val = {"x": rng.normal(size=(PB, PT, PI)), "h0": rng.normal(size=(k, PB, PH)) * 0.5,
           "c0": rng.normal(size=(k, PB, PH)) * 0.5, "gy": rng.normal(size=(PB, PT, 2 * PH)),
           "gh": rng.normal(size=(k, PB, PH)), "gc": rng.normal(size=(k, PB, PH))}
    tv = {n: torch.tensor(v, requires_grad=True) for n, v in val.items()}
    # our parameters are PyTorch's, stacked: W the layer 0 weight_ih of both
    # directions, WL those of layer 1, R every weight_hh, B [bias_ih | bias_hh]
    sfx = [f"_l{l}{r}" for l in range(PL) for r in ("", "_reverse")]
    tp = lambda n: getattr(mod, n)
    ours = {"w": torch.stack([tp("weight_ih" + s) for s in sfx[:2]]),
            "wl": torch.stack([tp("weight_ih" + s) for s in sfx[2:]]),
            "r": torch.stack([tp("weight_hh" + s) for s in sfx]),
            "b": torch.stack([torch.cat([tp("bias_ih" + s), tp("bias_hh" + s)]) for s in sfx])}
    packed = torch.nn.utils.rnn.pack_padded_sequence(tv["x"], torch.tensor(plens), batch_first=True,
                                                     enforce_sorted=False)
    out, hn = mod(packed, (tv["h0"], tv["c0"]) if kind == "lstm" else tv["h0"])
    y, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=PT)
    hT, cT = (hn[0], hn[1]) if kind == "lstm" else (hn, None)
    loss = (y * tv["gy"]).mean() + (hT * tv["gh"]).mean() + ((cT * tv["gc"]).mean() if cT is not None else 0)
    loss.backward()
    os.makedirs("pt", exist_ok=True)
    subprocess.run(["rm", "-rf", "pt", "pt_out"])
    os.makedirs("pt")
    names = ["x", "h0", "gy", "gh"] + (["c0", "gc"] if kind == "lstm" else [])
    for n in names:
        np.save(f"pt/{n}.npy", val[n])
    for n, t in ours.items():
        np.save(f"pt/{n}.npy", t.detach().numpy())
    net = 'var { name: "len" shape: [-1] dtype: INT64 }\n'
    for n in names:
        net += f'var {{ name: "{n}" kind: PARAM shape: {list(val[n].shape)} dtype: FLOAT64 }}\n'
    net += op_text(kind, PH, PL, "bidirectional", False, 0, 1 if kind == "gru" else 0, True, True)
    net += ('op { type: "broadcast_mul" inputs: ["y", "gy"] outputs: "wy" }\n'
            'op { type: "mean" inputs: "wy" outputs: "l1" }\n'
            'op { type: "broadcast_mul" inputs: ["hT", "gh"] outputs: "wh" }\n'
            'op { type: "mean" inputs: "wh" outputs: "l2" }\n')
    if kind == "lstm":
        net += ('op { type: "broadcast_mul" inputs: ["cT", "gc"] outputs: "wc" }\n'
                'op { type: "mean" inputs: "wc" outputs: "l3" }\n'
                'op { type: "sum" inputs: ["l1", "l2", "l3"] outputs: "avg_loss" }\n')
    else:
        net += 'op { type: "sum" inputs: ["l1", "l2"] outputs: "avg_loss" }\n'
    net += (f'train {{ loss: "avg_loss" batch_size: {PB} seed: 1 shuffle: false optimizer {{ type: "sgd" lr: 1 }}\n'
            '  data { var: "len" file: "plen.npy" } }\n')
    open("pt.pbtxt", "w").write(net)
    fetch = ["--fetch", "y=py.npy", "--fetch", "hT=phT.npy"] + (["--fetch", "cT=pcT.npy"] if kind == "lstm" else [])
    run("infer", "pt.pbtxt", "--params", "pt", "--data", "len=plen.npy", *fetch)
    got = {"Y": (np.load("py.npy"), y), "HT": (np.load("phT.npy"), hT)}
    if kind == "lstm":
        got["CT"] = (np.load("pcT.npy"), cT)
    # one SGD step at lr 1 from these values: the gradient is before - after
    run("train", "pt.pbtxt", "--params", "pt", "--iterations", "1", "--save", "pt_out")
    step = sorted(d for d in os.listdir("pt_out") if d.startswith("step-"))[-1]
    grad = lambda n: np.load(f"pt/{n}.npy") - np.load(f"pt_out/{step}/{n}.npy")
    for n in ("x", "h0") + (("c0",) if kind == "lstm" else ()):
        got["d" + n] = (grad(n), tv[n].grad)
    pg = lambda n: getattr(mod, n).grad
    want_g = {"w": torch.stack([pg("weight_ih" + s) for s in sfx[:2]]),
              "wl": torch.stack([pg("weight_ih" + s) for s in sfx[2:]]),
              "r": torch.stack([pg("weight_hh" + s) for s in sfx]),
              "b": torch.stack([torch.cat([pg("bias_ih" + s), pg("bias_hh" + s)]) for s in sfx])}
    for n, t in want_g.items():
        got["d" + n] = (grad(n), t)
    worst = 0
    for n, (g, want) in got.items():
        want = want.detach().numpy()
        assert g.shape == want.shape, (kind, n, g.shape, want.shape)
        err = np.max(np.abs(g - want) / (1 + np.abs(want)))
        assert err < 1e-9, f"{kind}: {n} off by {err} against PyTorch"
        worst = max(worst, err)
    print(f"PyTorch {torch.__version__} nn.{make.__name__}, 2 layers bidirectional, packed lengths {list(plens)}, "
          f"initial states: Y, final states and the gradients of X, states and all weights agree (worst {worst:.1e})")

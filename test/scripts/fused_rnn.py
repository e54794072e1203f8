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
#   4. the final state written back into the STATE variable its initial
#      state is read from (truncated BPTT) carries across batches.
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

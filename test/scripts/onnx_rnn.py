# onnx_rnn.py — ONNX LSTM, GRU, RNN and Gather through `paddle-run import`
# and `infer`, against an independent NumPy implementation of ONNX's
# definitions (onnx 1.12 has no onnx.reference): both layouts, forward,
# reverse and bidirectional, sequence_lens (int32, uneven), initial
# states, peepholes, clip, GRU linear_before_reset 0 and 1, RNN Tanh and
# Relu (layout 0's lengths and states as initializers, layout 1's as
# data); float32 (to 1e-5 of the largest value) and float64 (to 1e-12).
# Each imported net is exported again (onnx.checker accepts it), imported
# and run: the same values, exactly. Gather on axis 0 and 1 with negative
# data indices equals numpy.take. Then what is refused: a non-default
# activation, input_forget, W as a graph input — each exit 2 naming the
# node and what is not supported.
import os, subprocess, sys
import numpy as np

try:
    import onnx
    from onnx import helper, numpy_helper, TensorProto
except ImportError:
    print("skipped: python3-onnx is not installed")
    sys.exit(77)

PR = os.environ["PR"]
rng = np.random.default_rng(7)
sig = lambda v: 1 / (1 + np.exp(-v))


def onnx_rnn(kind, X, W, R, B, lens, h0, c0, P, clip, lbr, act, direction, layout):
    """ONNX's Y, Y_h, Y_c in layout `layout`, computed in float64."""
    if layout == 1:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, Bn, _ = X.shape
    dirs, GH = W.shape[0], W.shape[1]
    H = R.shape[2]
    lens = np.full(Bn, T) if lens is None else lens
    Y = np.zeros((T, dirs, Bn, H))
    YH, YC = np.zeros((dirs, Bn, H)), np.zeros((dirs, Bn, H))
    clip = float(np.float32(clip))  # an ONNX float attribute
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    f = np.tanh if act == "Tanh" else (lambda v: np.maximum(v, 0))
    for d in range(dirs):
        rev = direction == "reverse" or d == 1
        Wb, Rb = (B[d, :GH], B[d, GH:]) if B is not None else (np.zeros(GH), np.zeros(GH))
        for b in range(Bn):
            h = h0[d, b].copy() if h0 is not None else np.zeros(H)
            c = c0[d, b].copy() if c0 is not None else np.zeros(H)
            steps = range(lens[b] - 1, -1, -1) if rev else range(lens[b])
            for t in steps:
                x = X[t, b]
                if kind == "LSTM":
                    g = x @ W[d].T + h @ R[d].T + Wb + Rb
                    gi, go, gf, gc = np.split(g, 4)
                    pi, po, pf = np.split(P[d], 3) if P is not None else (0, 0, 0)
                    i, fg = sig(cl(gi + pi * c)), sig(cl(gf + pf * c))
                    c = fg * c + i * np.tanh(cl(gc))
                    h = sig(cl(go + po * c)) * np.tanh(c)
                elif kind == "GRU":
                    xw = x @ W[d].T + Wb
                    z = sig(cl(xw[:H] + h @ R[d, :H].T + Rb[:H]))
                    r = sig(cl(xw[H:2 * H] + h @ R[d, H:2 * H].T + Rb[H:2 * H]))
                    if lbr:
                        n = np.tanh(cl(xw[2 * H:] + r * (h @ R[d, 2 * H:].T + Rb[2 * H:])))
                    else:
                        n = np.tanh(cl(xw[2 * H:] + (r * h) @ R[d, 2 * H:].T + Rb[2 * H:]))
                    h = (1 - z) * n + z * h
                else:
                    h = f(cl(x @ W[d].T + h @ R[d].T + Wb + Rb))
                Y[t, d, b] = h
            YH[d, b], YC[d, b] = h, c
    if layout == 1:
        return Y.transpose(2, 0, 1, 3), YH.transpose(1, 0, 2), YC.transpose(1, 0, 2)
    return Y, YH, YC


def run(*args, expect=0):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    if r.returncode != expect:
        sys.exit(f"FAIL: paddle-run {' '.join(args)}: exit {r.returncode}, expected {expect}\n{r.stdout}{r.stderr}")
    return r.stderr


def import_and_run(name, model, feeds, fetch):
    onnx.save(model, f"{name}.onnx")
    for p in (f"{name}.pbtxt",):
        if os.path.exists(p):
            os.remove(p)
    subprocess.run(["rm", "-rf", f"{name}.params"])
    run("import", f"{name}.onnx", "-o", f"{name}.pbtxt", "--params-out", f"{name}.params")
    args = ["infer", f"{name}.pbtxt", "--params", f"{name}.params"]
    for k, v in feeds.items():
        np.save(f"{name}.{k}.npy", v)
        args += ["--data", f"{k}={name}.{k}.npy"]
    for k in fetch:
        args += ["--fetch", f"{k}={name}.out.{k}.npy"]
    run(*args)
    got = {k: np.load(f"{name}.out.{k}.npy") for k in fetch}
    # and back: our net exported (weights to ONNX's gate order again),
    # checked, imported and run gives the same values
    run("export", f"{name}.pbtxt", "--params", f"{name}.params", "-o", f"{name}.re.onnx",
        *[a for k in fetch for a in ("--fetch", k)])
    onnx.checker.check_model(onnx.load(f"{name}.re.onnx"), full_check=True)
    subprocess.run(["rm", "-rf", f"{name}.re.params"])
    run("import", f"{name}.re.onnx", "-o", f"{name}.re.pbtxt", "--params-out", f"{name}.re.params")
    run(*[a.replace(f"{name}.pbtxt", f"{name}.re.pbtxt").replace(f"{name}.params", f"{name}.re.params")
          .replace(".out.", ".re.out.") for a in args])
    for k in fetch:
        assert np.array_equal(np.load(f"{name}.re.out.{k}.npy"), got[k]), (name, k)
    return got


ONNX_T = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}


def case(kind, dt, layout, direction, H=5, T=4, Bn=3, I=3, lens=True, states=True, peep=True, clip=0.0, lbr=0,
         act="Tanh"):
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    dirs = 2 if direction == "bidirectional" else 1
    X = rng.standard_normal((T, Bn, I) if layout == 0 else (Bn, T, I))
    W = rng.uniform(-0.6, 0.6, (dirs, G * H, I))
    R = rng.uniform(-0.6, 0.6, (dirs, G * H, H))
    B = rng.uniform(-0.5, 0.5, (dirs, 2 * G * H))
    L = np.array([T, 1, T - 1][:Bn], np.int32) if lens else None
    sh = (dirs, Bn, H) if layout == 0 else (Bn, dirs, H)
    h0 = rng.standard_normal(sh) * 0.5 if states else None
    c0 = rng.standard_normal(sh) * 0.5 if states and kind == "LSTM" else None
    P = rng.uniform(-0.5, 0.5, (dirs, 3 * H)) if peep and kind == "LSTM" else None
    cast = lambda a: a.astype(dt)
    X, W, R, B = [cast(a).astype(np.float64) for a in (X, W, R, B)]  # the values the model holds
    h0, c0, P = [None if a is None else cast(a).astype(np.float64) for a in (h0, c0, P)]
    want = onnx_rnn(kind, X, W, R, B, L, h0, c0, P, clip, lbr, act, direction, layout)
    inits = [numpy_helper.from_array(cast(W), "W"), numpy_helper.from_array(cast(R), "R"),
             numpy_helper.from_array(cast(B), "B")]
    ins = ["X", "W", "R", "B", "seq" if lens else "", "h0" if states else ""]
    feeds = {"X": cast(X)}
    gin = [helper.make_tensor_value_info("X", ONNX_T[dt], list(X.shape))]

    def extra(name, v, t):
        # infer's data files share their first dim (the batch): layout 0's
        # lengths and states go in as initializers, layout 1's as data
        if layout == 0:
            inits.append(numpy_helper.from_array(v, name))
        else:
            feeds[name] = v
            gin.append(helper.make_tensor_value_info(name, t, list(v.shape)))
    if lens:
        extra("seq", L, TensorProto.INT32)
    if states:
        extra("h0", cast(h0), ONNX_T[dt])
    if kind == "LSTM":
        ins.append("c0" if states else "")
        if states:
            extra("c0", cast(c0), ONNX_T[dt])
        if P is not None:
            ins.append("P")
            inits.append(numpy_helper.from_array(cast(P), "P"))
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    attrs = dict(hidden_size=H, direction=direction, layout=layout)
    if clip:
        attrs["clip"] = clip
    if kind == "GRU":
        attrs["linear_before_reset"] = lbr
    if kind == "RNN":
        attrs["activations"] = [act] * dirs
    node = helper.make_node(kind, ins, outs, name="rnn0", **attrs)
    gout = [helper.make_tensor_value_info(o, ONNX_T[dt], None) for o in outs]
    model = helper.make_model(helper.make_graph([node], "g", gin, gout, inits),
                              opset_imports=[helper.make_opsetid("", 14)])
    got = import_and_run(f"{kind}_{layout}_{direction}", model, feeds, outs)
    tol = 1e-5 if dt == np.float32 else 1e-12
    for o, w in zip(outs, want):
        g = got[o]
        assert g.shape == w.shape and g.dtype == dt, (o, g.shape, w.shape, g.dtype)
        err = np.max(np.abs(g - w)) / np.max(np.abs(w))
        assert err <= tol, (kind, o, err)
    print(f"ok: {kind} {np.dtype(dt).name} layout {layout} {direction}"
          f"{' lengths' if lens else ''}{' states' if states else ''}{' clip' if clip else ''}"
          f"{' lbr=1' if lbr else ''}{' ' + act if kind == 'RNN' else ''}: Y, Y_h{', Y_c' if kind == 'LSTM' else ''} "
          f"match ONNX's definition")


for dt in (np.float32, np.float64):
    case("LSTM", dt, 0, "bidirectional", clip=0.9)
    case("LSTM", dt, 1, "reverse", peep=False)
    case("LSTM", dt, 0, "forward", lens=False, states=False, peep=False)
    case("GRU", dt, 0, "bidirectional", lbr=0)
    case("GRU", dt, 1, "forward", lbr=1, clip=0.7)
    case("RNN", dt, 1, "bidirectional", act="Relu")
    case("RNN", dt, 0, "reverse", act="Tanh", states=False)

# Gather: a constant table, data indices (some negative)
data = rng.standard_normal((4, 5, 3)).astype(np.float32)
idx = np.array([[0, -1], [3, -5]], np.int64)
for axis in (0, 1):
    n = idx.copy() if axis else np.array([[0, -1], [3, -4]], np.int64)
    node = helper.make_node("Gather", ["data", "idx"], ["y"], axis=axis)
    model = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(data, "data")]),
        opset_imports=[helper.make_opsetid("", 13)])
    got = import_and_run(f"gather{axis}", model, {"idx": n}, ["y"])["y"]
    assert np.array_equal(got, np.take(data, n, axis=axis)), axis
    print(f"ok: Gather axis {axis} of a [4, 5, 3] table, negative indices: equals numpy.take")
    np.save("bad_idx.npy", np.array([[0, 1], [2, 5 if axis else 4]], np.int64))
    r = subprocess.run([PR, "infer", f"gather{axis}.pbtxt", "--params", f"gather{axis}.params",
                        "--data", "idx=bad_idx.npy", "--fetch", "y=bad_y.npy"], capture_output=True, text=True)
    assert r.returncode == 2, (r.returncode, r.stderr)
print("ok: an index outside [-V, V) stops infer (exit 2)")

# refused, each naming the node and what
def refused(name, node, gin, inits, want):
    model = helper.make_model(helper.make_graph(
        [node], "g", gin, [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None)], inits),
        opset_imports=[helper.make_opsetid("", 14)])
    onnx.save(model, f"{name}.onnx")
    err = run("import", f"{name}.onnx", "-o", f"{name}.pbtxt", expect=2)
    assert 'node #0 "bad"' in err and want in err, err
    print(f"ok: refused ({name}): {err.strip().split(': unsupported: ')[-1]}")

Wl = [numpy_helper.from_array(np.zeros((1, 8, 3), np.float32), "W"),
      numpy_helper.from_array(np.zeros((1, 8, 2), np.float32), "R")]
Xv = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 1, 3])]
refused("act", helper.make_node("LSTM", ["X", "W", "R"], ["", "Y_h"], name="bad", hidden_size=2,
                                activations=["Sigmoid", "Relu", "Tanh"]), Xv, Wl, "activations")
refused("forget", helper.make_node("LSTM", ["X", "W", "R"], ["", "Y_h"], name="bad", hidden_size=2,
                                   input_forget=1), Xv, Wl, "input_forget")
refused("winput", helper.make_node("LSTM", ["X", "W", "R"], ["", "Y_h"], name="bad", hidden_size=2),
        Xv + [helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, 8, 3])], Wl[1:], "W \"W\" must be a constant")

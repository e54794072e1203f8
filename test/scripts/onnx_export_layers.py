# onnx_export_layers.py — a 2-layer bidirectional lstm and gru (uneven
# lengths, initial states as state variables, every output fetched) export
# as a chain of one-layer ONNX nodes: onnx.checker (full check) accepts the
# model, and export -> import -> infer gives what infer gives on the
# original to 1e-6 (Y, and the final states of both layers, concatenated).
# There is no ONNX runtime in Debian 12: the reimport is the second reader.
import os, subprocess, sys
import numpy as np

try:
    import onnx
except ImportError:
    print("skipped: python3-onnx is not installed")
    sys.exit(77)

PR = os.environ["PR"]
rng = np.random.default_rng(5)
N, T, I, H, L, D = 4, 6, 3, 5, 2, 2


def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: paddle-run {' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


def case(kind, G):
    lstm = kind == "lstm"
    net = f"""
name: "{kind}2"
var {{ name: "x" shape: [-1, {T}, {I}] }}
var {{ name: "len" shape: [-1] dtype: INT64 }}
var {{ name: "h0" shape: [{L * D}, {N}, {H}] kind: STATE }}
{'var { name: "c0" shape: [%d, %d, %d] kind: STATE }' % (L * D, N, H) if lstm else ''}
var {{ name: "w" shape: [{D}, {G * H}, {I}] kind: PARAM }}
var {{ name: "wl" shape: [{(L - 1) * D}, {G * H}, {D * H}] kind: PARAM }}
var {{ name: "r" shape: [{L * D}, {G * H}, {H}] kind: PARAM }}
var {{ name: "b" shape: [{L * D}, {2 * G * H}] kind: PARAM }}
{'var { name: "p" shape: [%d, %d] kind: PARAM }' % (L * D, 3 * H) if lstm else ''}
op {{ type: "{kind}" inputs: ["x", "w", "r", "b", "len", "h0"{', "c0", "p", "wl"' if lstm else ', "wl"'}]
     outputs: ["y", "hT"{', "cT"' if lstm else ''}]
     attrs {{ key: "hidden_size" value {{ i: {H} }} }} attrs {{ key: "num_layers" value {{ i: {L} }} }}
     attrs {{ key: "direction" value {{ s: "bidirectional" }} }} }}
"""
    os.makedirs(kind, exist_ok=True)
    os.chdir(kind)
    open("net.pbtxt", "w").write(net)
    os.makedirs("params", exist_ok=True)
    shapes = {"h0": (L * D, N, H), "w": (D, G * H, I), "wl": ((L - 1) * D, G * H, D * H), "r": (L * D, G * H, H),
              "b": (L * D, 2 * G * H)}
    if lstm:
        shapes.update({"c0": (L * D, N, H), "p": (L * D, 3 * H)})
    for k, s in shapes.items():
        np.save(f"params/{k}.npy", rng.uniform(-0.6, 0.6, size=s).astype(np.float32))
    np.save("x.npy", rng.normal(size=(N, T, I)).astype(np.float32))
    np.save("len.npy", np.array([6, 2, 5, 1], np.int64))
    feeds = ["--data", "x=x.npy", "--data", "len=len.npy"]
    outs = ["y", "hT"] + (["cT"] if lstm else [])
    run("export", "net.pbtxt", "--params", "params", "-o", "m.onnx", *[a for o in outs for a in ("--fetch", o)])
    m = onnx.load("m.onnx")
    onnx.checker.check_model(m, full_check=True)
    types = [n.op_type for n in m.graph.node]
    assert types.count(kind.upper()) == L, types
    run("import", "m.onnx", "-o", "back.pbtxt", "--params-out", "back")
    for o in outs:
        run("infer", "net.pbtxt", "--params", "params", *feeds, "--fetch", f"{o}=a.npy")
        run("infer", "back.pbtxt", "--params", "back", *feeds, "--fetch", f"{o}=b.npy")
        a, b = np.load("a.npy"), np.load("b.npy")
        assert a.shape == b.shape, (kind, o, a.shape, b.shape)
        err = np.max(np.abs(a - b) / (1e-6 + np.abs(a)))
        if not np.allclose(a, b, rtol=1e-6, atol=1e-7):
            sys.exit(f"FAIL: {kind} {o}: export -> import differs by {err:g} relative")
        print(f"ok: {kind} {L} layers bidirectional, {o} {a.shape}: max difference {np.max(np.abs(a - b)):g}")
    os.chdir("..")


case("lstm", 4)
case("gru", 3)

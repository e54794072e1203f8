# onnx_export.py — `paddle-run export` and `import` on every shipped NetDesc
# (netdescs/*.pbtxt): parameters from a short training run (3 steps), the
# export (inference net pruned to its default fetch targets, opset 13) is
# accepted by onnx.checker (Debian's python3-onnx, full check with shape
# inference), carries each graph input's and output's name, dtype and shape,
# and export -> import -> infer gives what `infer` gives on the original to
# 1e-6 relative, on 64 rows of real data (Fashion-MNIST test images; the
# generated fit_a_line data). Then the imported fashion_mlp keeps its
# constants as state (not trained) and its weights as parameters, and
# `train --params` on it (with a loss added) starts from the imported
# parameter directory as it is: one step at lr 1e-30 leaves fc1.w as imported.
import glob, gzip, os, re, subprocess, sys
import numpy as np

try:
    import onnx
except ImportError:
    print("skipped: python3-onnx is not installed")
    sys.exit(77)

PR, ROOT = os.environ["PR"], os.environ["ROOT"]
FASHION = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
ONNX_DT = {1: "float32", 11: "float64", 6: "int32", 7: "int64", 2: "uint8"}
PD_DT = {"FLOAT32": "float32", "FLOAT64": "float64", "INT32": "int32", "INT64": "int64", "UINT8": "uint8"}


def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: paddle-run {' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


def data_for(net, var):
    """64 rows for data variable var of the shipped net (a text net: its
    declared batch of windows, read from its corpus; its keep flags 1)."""
    text = open(net).read()
    m = re.search(r'data \{ var: "%s"\s+type: "text"\s+file: "([^"]+)"' % re.escape(var), text)
    if m:
        files = sorted(glob.glob(m.group(1)))
        if not files:
            return None
        shape = declared(text)[var][1]
        raw = np.frombuffer(open(files[0], "rb").read(), np.uint8)[: shape[0] * shape[1]]
        return raw.astype(np.int64).reshape(shape)
    if re.search(r'keep: "%s"' % re.escape(var), text):
        return np.ones(declared(text)[var][1], np.float32)
    m = re.search(r'data \{ var: "%s"\s+file: "([^"]+)"' % re.escape(var), text)
    f = m.group(1) if m else None
    if f and f.endswith(".gz"):
        if not os.path.exists(FASHION):
            return None
        raw = gzip.open(FASHION).read()
        return np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 28, 28)[:64].copy()
    return np.load(os.path.join(os.path.dirname(net), f))[:64]


def declared(net_text):
    """name -> (dtype, shape) of the declared variables of a NetDesc."""
    out = {}
    for m in re.finditer(r'var \{ name: "([^"]+)"\s+shape: \[([^\]]*)\](?:\s+dtype: (\w+))?', net_text):
        shape = [int(s) for s in m.group(2).split(",") if s.strip()]
        out[m.group(1)] = (PD_DT[m.group(3) or "FLOAT32"], shape)
    return out


checked = 0
text_nets = 0
for net in sorted(glob.glob(os.path.join(ROOT, "netdescs", "*.pbtxt"))):
    name = os.path.basename(net)[:-6]
    if 'type: "text"' in open(net).read():
        # a text net's windows and carried states are declared at its own batch size
        if not glob.glob("/usr/share/games/fortunes/*.u8"):
            print(f"not checked: {name} (needs Debian's fortunes)")
            text_nets += 1
            continue
        run("train", net, "--iterations", "20", "--save", f"{name}.ckpt")
    else:
        run("train", net, "--iterations", "3", "--batch-size", "8", "--save", f"{name}.ckpt")
    out = run("export", net, "--params", f"{name}.ckpt", "-o", f"{name}.onnx")
    targets = out.split("outputs:")[1].split()
    model = onnx.load(f"{name}.onnx")
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version >= 13, model.opset_import
    # names, dtypes and shapes of the graph's inputs and outputs are the net's
    decl = declared(open(net).read())
    for vi in model.graph.input:
        dt, shape = decl[vi.name]
        t = vi.type.tensor_type
        got = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
        assert ONNX_DT[t.elem_type] == dt and got == shape, (name, vi.name, t, dt, shape)
    assert [o.name for o in model.graph.output] == targets, (name, targets)
    want = {"fashion_lstm_fused": "prob", "fashion_gru": "prob", "char_lm": "logits"}.get(name)
    assert want is None or want in targets, (name, targets)
    run("import", f"{name}.onnx", "-o", f"{name}.imported.pbtxt", "--params-out", f"{name}.imported")
    # every value comes back as it was trained: the recurrent weights went to
    # ONNX's gate order and back, exactly
    for init in model.graph.initializer:
        orig = os.path.join(f"{name}.ckpt", "latest", init.name + ".npy")
        if os.path.exists(orig):
            a, b = np.load(orig), np.load(os.path.join(f"{name}.imported", init.name + ".npy"))
            assert a.shape == b.shape and np.array_equal(a, b), (name, init.name)
    feeds = []
    for vi in model.graph.input:
        x = data_for(net, vi.name)
        if x is None:
            print(f"skipped: {name} needs {FASHION} (dataset-fashion-mnist)")
            sys.exit(77)
        np.save(f"{name}.{vi.name}.npy", x)
        feeds += ["--data", f"{vi.name}={name}.{vi.name}.npy"]
    for t in targets:
        run("infer", net, "--params", f"{name}.ckpt", *feeds, "--fetch", f"{t}={name}.a.npy")
        run("infer", f"{name}.imported.pbtxt", "--params", f"{name}.imported", *feeds, "--fetch", f"{t}={name}.b.npy")
        a, b = np.load(f"{name}.a.npy"), np.load(f"{name}.b.npy")
        assert a.shape == b.shape and a.dtype == b.dtype, (name, t, a.shape, b.shape, a.dtype, b.dtype)
        rel = np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-30))
        assert rel <= 1e-6, (name, t, rel)
        print(f"ok: {name}: export checked by onnx.checker; export -> import -> infer of {t} "
              f"{list(a.shape)} matches infer on the original (max relative difference {rel:.3g})")
    checked += 1

# Constants an export implies (the 1/255 scale, reshape's shape) come back as
# state, the trained weights as parameters.
text = open("fashion_mlp.imported.pbtxt").read()
kinds = dict(re.findall(r'var \{ name: "([^"]+)".*kind: (\w+)', text))
assert kinds["fc1.w"] == "PARAM" and kinds["pixels"] == "DATA", kinds
assert [k for k, v in kinds.items() if v == "STATE"], kinds
print("ok: fashion_mlp's imported scale constant is state, its weights parameters")
if os.path.exists(FASHION):
    open("ft.pbtxt", "w").write(text + '''
var { name: "label" shape: [-1, 1] dtype: INT64 }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "label"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 8
  data { var: "pixels" file: "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz" }
  data { var: "label"  file: "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz" } }
''')
    run("train", "ft.pbtxt", "--params", "fashion_mlp.imported", "--iterations", "1", "--lr", "1e-30", "--save", "ft")
    a, b = np.load("ft/latest/fc1.w.npy"), np.load("fashion_mlp.imported/fc1.w.npy")
    assert np.array_equal(a, b), np.abs(a - b).max()
    print("ok: train --params on the imported net starts from the imported parameters")
assert checked + text_nets == len(glob.glob(os.path.join(ROOT, "netdescs", "*.pbtxt"))), checked
print(f"{checked} exported nets checked")

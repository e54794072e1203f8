# onnx_export_ops.py — every op the exporter has an ONNX form for, in one
# net with random parameters and running statistics (NumPy-written
# parameter directory): the export is accepted by onnx.checker (full check),
# and export -> import -> infer gives what infer gives on the original to
# 1e-6 relative for every output — fc with each act, mul, elementwise_add at
# an inner axis, the broadcast ops, sum, scale (both orders), cast, reshape,
# flatten, transpose, concat, identity, relu/sigmoid/tanh, softmax and
# log_softmax, matmul, conv2d (groups, stride, padding, dilation), pool2d
# (max, avg exclusive and not, ceil mode, global), batch_norm, dropout,
# slice (constant bounds with steps, and a start read at run time).
import os, re, subprocess, sys
import numpy as np

try:
    import onnx
except ImportError:
    print("skipped: python3-onnx is not installed")
    sys.exit(77)

PR = os.environ["PR"]
NET = """
name: "every_op"
var { name: "img" shape: [-1, 4, 9, 9] }
var { name: "v" shape: [-1, 6] }
var { name: "ids" shape: [-1, 6] dtype: INT32 }
var { name: "mw" shape: [6, 6] kind: PARAM }
var { name: "eb" shape: [3, 1] kind: PARAM }
var { name: "b1x" shape: [6] kind: PARAM }
var { name: "dv" shape: [6] kind: PARAM }
var { name: "mm" shape: [3, 2] kind: PARAM }
var { name: "st" shape: [1] dtype: INT64 }
op { type: "conv2d" inputs: ["img", "cw", "cb"] outputs: "c1" attrs { key: "num_filters" value { i: 6 } }
     attrs { key: "kernel_size" value { ints: [3, 3] } } attrs { key: "paddings" value { ints: [1, 1] } }
     attrs { key: "groups" value { i: 2 } } attrs { key: "strides" value { ints: [1, 2] } } }
op { type: "conv2d" inputs: ["img", "dw"] outputs: "c2" attrs { key: "num_filters" value { i: 3 } }
     attrs { key: "kernel_size" value { ints: [3, 3] } } attrs { key: "dilations" value { ints: [2, 2] } } }
op { type: "batch_norm" inputs: ["c1", "bs", "bb", "bm", "bv"] outputs: ["n1", "bm", "bv"] attrs { key: "epsilon" value { f: 0.001 } } }
op { type: "pool2d" inputs: "n1" outputs: "p1" attrs { key: "ksize" value { ints: [2, 2] } } attrs { key: "strides" value { ints: [2, 2] } } attrs { key: "ceil_mode" value { b: true } } }
op { type: "pool2d" inputs: "n1" outputs: "p2" attrs { key: "pooling_type" value { s: "avg" } } attrs { key: "ksize" value { ints: [3, 3] } } attrs { key: "paddings" value { ints: [1, 1] } } }
op { type: "pool2d" inputs: "n1" outputs: "p3" attrs { key: "pooling_type" value { s: "avg" } } attrs { key: "ksize" value { ints: [3, 3] } } attrs { key: "paddings" value { ints: [1, 1] } } attrs { key: "exclusive" value { b: false } } }
op { type: "pool2d" inputs: "c2" outputs: "g1" attrs { key: "global_pooling" value { b: true } } attrs { key: "pooling_type" value { s: "avg" } } }
op { type: "pool2d" inputs: "c2" outputs: "g2" attrs { key: "global_pooling" value { b: true } } }
op { type: "flatten" inputs: "p1" outputs: "f1" }
op { type: "fc" inputs: ["f1", "w1", "b1"] outputs: "h1" attrs { key: "size" value { i: 6 } } attrs { key: "act" value { s: "relu" } } }
op { type: "fc" inputs: ["p2", "w2"] outputs: "h2" attrs { key: "size" value { i: 6 } } attrs { key: "act" value { s: "sigmoid" } } }
op { type: "fc" inputs: ["p3", "w3", "b3"] outputs: "h3" attrs { key: "size" value { i: 6 } } attrs { key: "act" value { s: "tanh" } } }
op { type: "mul" inputs: ["v", "mw"] outputs: "m1" }
op { type: "elementwise_add" inputs: ["c2", "eb"] outputs: "e1" attrs { key: "axis" value { i: 1 } } }
op { type: "elementwise_add" inputs: ["h1", "b1x"] outputs: "e2" }
op { type: "sum" inputs: ["h1", "h2", "h3"] outputs: "s1" }
op { type: "broadcast_sub" inputs: ["s1", "m1"] outputs: "s2" }
op { type: "broadcast_mul" inputs: ["s2", "e2"] outputs: "s3" }
op { type: "broadcast_div" inputs: ["s3", "dv"] outputs: "s4" }
op { type: "broadcast_add" inputs: ["s4", "v"] outputs: "s5" }
op { type: "scale" inputs: "s5" outputs: "sc1" attrs { key: "scale" value { f: 2.5 } } attrs { key: "bias" value { f: -1 } } }
op { type: "scale" inputs: "sc1" outputs: "sc2" attrs { key: "scale" value { f: 0.5 } } attrs { key: "bias" value { f: 3 } } attrs { key: "bias_after_scale" value { b: false } } }
op { type: "scale" inputs: "sc2" outputs: "sc3" }
op { type: "cast" inputs: "ids" outputs: "idf" attrs { key: "dtype" value { s: "float32" } } }
op { type: "concat" inputs: ["sc3", "idf"] outputs: "cat" attrs { key: "axis" value { i: -1 } } }
op { type: "reshape" inputs: "cat" outputs: "r1" attrs { key: "shape" value { ints: [0, 3, -1] } } }
op { type: "transpose" inputs: "r1" outputs: "t1" attrs { key: "perm" value { ints: [0, 2, 1] } } }
op { type: "matmul" inputs: ["t1", "mm"] outputs: "mm1" }
op { type: "identity" inputs: "mm1" outputs: "i1" }
op { type: "dropout" inputs: "i1" outputs: ["d1", "d1.mask"] attrs { key: "dropout_prob" value { f: 0.3 } } }
op { type: "softmax" inputs: "d1" outputs: "prob" }
op { type: "log_softmax" inputs: "d1" outputs: "logp" }
op { type: "sigmoid" inputs: "e1" outputs: "es" }
op { type: "tanh" inputs: "g1" outputs: "gt" }
op { type: "relu" inputs: "g2" outputs: "gr" }
op { type: "slice" inputs: "img" outputs: "sl1" attrs { key: "axes" value { ints: [3, 2] } }
     attrs { key: "starts" value { ints: [-2, 1] } } attrs { key: "ends" value { ints: [0, 9223372036854775807] } }
     attrs { key: "steps" value { ints: [-3, 2] } } }
op { type: "slice" inputs: ["sl1", "st"] outputs: "sl2" attrs { key: "axes" value { ints: [1] } }
     attrs { key: "sizes" value { ints: [2] } } }
"""
open("net.pbtxt", "w").write(NET)
rng = np.random.default_rng(3)
shapes = {"cw": (6, 2, 3, 3), "cb": (6,), "dw": (3, 4, 3, 3), "bs": (6,), "bb": (6,), "bm": (6,), "bv": (6,),
          "w1": (90, 6), "b1": (6,), "w2": (6 * 9 * 5, 6), "w3": (6 * 9 * 5, 6), "b3": (6,), "mw": (6, 6),
          "eb": (3, 1), "b1x": (6,), "dv": (6,), "mm": (3, 2)}
os.makedirs("params", exist_ok=True)
for k, s in shapes.items():
    a = rng.normal(size=s)
    if k in ("bv", "dv"):
        a = np.abs(a) + 0.5
    np.save(f"params/{k}.npy", a.astype(np.float32))
np.save("img.npy", rng.normal(size=(5, 4, 9, 9)).astype(np.float32))
np.save("v.npy", rng.normal(size=(5, 6)).astype(np.float32))
np.save("ids.npy", rng.integers(-3, 9, size=(5, 6)).astype(np.int32))
np.save("st.npy", np.array([1], dtype=np.int64))
feeds = ["--data", "img=img.npy", "--data", "v=v.npy", "--data", "ids=ids.npy", "--data", "st=st.npy"]
targets = ["prob", "logp", "es", "gt", "gr", "sl2"]


def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: paddle-run {' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


out = run("export", "net.pbtxt", "--params", "params", "-o", "m.onnx")
assert out.split("outputs:")[1].split() == targets, out
m = onnx.load("m.onnx")
onnx.checker.check_model(m, full_check=True)
ops = sorted({n.op_type for n in m.graph.node})
print("exported ONNX ops:", " ".join(ops))
for want in ["Add", "AveragePool", "BatchNormalization", "Cast", "Concat", "Constant", "Conv", "Div", "Dropout",
             "Flatten", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "Identity", "LogSoftmax", "MatMul", "MaxPool",
             "Mul", "Relu", "Reshape", "Sigmoid", "Slice", "Softmax", "Sub", "Sum", "Tanh", "Transpose"]:
    assert want in ops, want
run("import", "m.onnx", "-o", "back.pbtxt", "--params-out", "back")
for t in targets:
    run("infer", "net.pbtxt", "--params", "params", *feeds, "--fetch", f"{t}=a.npy")
    run("infer", "back.pbtxt", "--params", "back", *feeds, "--fetch", f"{t}=b.npy")
    a, b = np.load("a.npy"), np.load("b.npy")
    assert a.shape == b.shape and a.dtype == b.dtype, (t, a.shape, b.shape)
    rel = float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-30)))
    assert rel <= 1e-6, (t, rel)
    print(f"ok: {t} {list(a.shape)}: export -> import -> infer matches infer (max relative difference {rel:.3g})")
    if t == "sl2":  # the slices against NumPy's: copies, so exact
        want = np.load("img.npy")[:, :, 1::2, 7:0:-3][:, 1:3]
        assert a.shape == want.shape and (a == want).all(), (a.shape, want.shape)
        print("ok: sl2 equals NumPy's img[:, :, 1::2, 7:0:-3][:, 1:3]")

# onnx_constant.py — `import --constant NAME=FILE.npy`: a graph input that
# a node needs as a constant (a Reshape's shape, a Clip's bound, given as
# graph inputs rather than initializers) takes its value at import. Without
# it the import exits 2 naming the input and the option; with it the net
# imports and `infer` agrees with NumPy on a batch other than the exported
# one. Then what is refused, each exit 2 with nothing written: a name that
# is no graph input, an input that already has a value, another element
# type, another rank or a fixed dim that differs, a bad file, a name bound
# twice, an argument without "=".
import os, subprocess, sys
import numpy as np

try:
    import onnx
    from onnx import helper, numpy_helper, TensorProto
except ImportError:
    print("skipped: python3-onnx is not installed")
    sys.exit(77)

PR = os.environ["PR"]


def run(*args, expect=0, says=None):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    out = r.stdout + r.stderr
    if r.returncode != expect:
        sys.exit(f"FAIL: paddle-run {' '.join(args)}: exit {r.returncode}, expected {expect}\n{out}")
    if says and says not in out:
        sys.exit(f"FAIL: paddle-run {' '.join(args)}: the message does not say {says!r}\n{out}")
    return out


x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [2])
lo = helper.make_tensor_value_info("lo", TensorProto.FLOAT, [])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])
nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Clip", ["r", "lo"], ["y"])]
init = numpy_helper.from_array(np.array(0.1, dtype=np.float32), "lo")
onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x, shape, lo], [y]),
                            opset_imports=[helper.make_opsetid("", 13)]), "m.onnx")
onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x, shape, lo], [y], [init]),
                            opset_imports=[helper.make_opsetid("", 13)]), "m_init.onnx")
np.save("shape.npy", np.array([2, 12], dtype=np.int64))
np.save("shape_i32.npy", np.array([2, 12], dtype=np.int32))
np.save("shape_2d.npy", np.array([[2, 12]], dtype=np.int64))
np.save("shape_3.npy", np.array([2, 12, 1], dtype=np.int64))
np.save("lo.npy", np.array(0.25, dtype=np.float32))
with open("garbage.npy", "wb") as f:
    f.write(b"not a numpy file")
xs = np.random.default_rng(5).random((5, 3, 4)).astype(np.float32)
np.save("x.npy", xs)

# without the values: refused, the message naming the input and the option
run("import", "m.onnx", "-o", "net.pbtxt", expect=2, says="`import --constant shape=FILE.npy` gives its value")
assert not os.path.exists("net.pbtxt")
run("import", "m.onnx", "-o", "net.pbtxt", "--constant", "shape=shape.npy", expect=2,
    says="`import --constant lo=FILE.npy` gives its value")
assert not os.path.exists("net.pbtxt")

# with them: the net imports, the batch is free, infer agrees with NumPy at batch 5
out = run("import", "m.onnx", "-o", "net.pbtxt", "--constant", "shape=shape.npy", "--constant", "lo=lo.npy",
          "--params-out", "p")
assert "batch: the exported batch 2 is -1" in out, out
run("infer", "net.pbtxt", "--params", "p", "--data", "x=x.npy", "--fetch", "y=y.npy")
got, want = np.load("y.npy"), np.maximum(xs.reshape(5, 12), np.float32(0.25))
assert got.shape == want.shape and np.array_equal(got, want), (got, want)

# refused, nothing written
bad = [(["nope=shape.npy"], 'the model has no graph input "nope"', "m.onnx"),
       (["shape=shape.npy", "lo=lo.npy"], 'graph input "lo" already has a value', "m_init.onnx"),
       (["shape=shape_i32.npy"], 'graph input "shape" is INT64, the file holds int32', "m.onnx"),
       (["shape=shape_2d.npy"], 'graph input "shape" has 1 dims, the file 2', "m.onnx"),
       (["shape=shape_3.npy"], 'dim 0 of graph input "shape" is 2, the file\'s 3', "m.onnx"),
       (["shape=garbage.npy"], "garbage.npy", "m.onnx"),
       (["shape=missing.npy"], "missing.npy", "m.onnx"),
       (["shape=shape.npy", "shape=shape_3.npy"], 'binds "shape" twice', "m.onnx"),
       (["shape"], "expected NAME=FILE.npy", "m.onnx")]
for consts, says, model in bad:
    args = ["import", model, "-o", "bad.pbtxt", "--params-out", "bad"]
    for c in consts:
        args += ["--constant", c]
    run(*args, expect=2, says=says)
    assert not os.path.exists("bad.pbtxt") and not os.path.exists("bad"), consts
print("import --constant: values fixed at import, infer agrees with NumPy; 9 misuses refused with exit 2")

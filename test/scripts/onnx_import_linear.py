# onnx_import_linear.py — ONNX import costs time linear in the graph
# (issue 18.5): a chain of 50,000 Relu nodes and one Sum node of 50,000
# inputs each import within 60 s (about 1 s each, 10 s under ASan; before, the
# importer rebuilt the whole net for every node and looked names up in
# lists: 8,000 nodes took about a minute, so 50,000 would take about an
# hour), and the NetDesc written holds every op. The shapes come from
# inferring the ops added since the last time over a net of them alone, with
# their inputs preset: a state written in place stays state there (two
# BatchNormalization nodes sharing their running statistics import).
import os, re, subprocess, sys, time

try:
    import onnx
    from onnx import helper, TensorProto
except ImportError:
    print("skipped: python3-onnx is not installed")
    sys.exit(77)

PR = os.environ["PR"]
N, BOUND = 50000, 60.0

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])


def save(nodes, out, path):
    y = helper.make_tensor_value_info(out, TensorProto.FLOAT, [None, 4])
    g = helper.make_graph(nodes, "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    open(path, "wb").write(m.SerializeToString())


save([helper.make_node("Relu", ["x" if i == 0 else "h%d" % (i - 1)], ["h%d" % i]) for i in range(N)],
     "h%d" % (N - 1), "chain.onnx")
save([helper.make_node("Relu", ["x"], ["r%d" % i]) for i in range(N)] +
     [helper.make_node("Sum", ["r%d" % i for i in range(N)], ["y"])], "y", "sum.onnx")

for name, want in (("chain", {"relu": N}), ("sum", {"relu": N, "broadcast_add": N - 1})):
    t0 = time.monotonic()
    r = subprocess.run([PR, "import", name + ".onnx", "-o", name + ".pbtxt"], capture_output=True, text=True)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"FAIL: import {name}.onnx: exit {r.returncode}\n{r.stdout}{r.stderr}")
    if dt > BOUND:
        sys.exit(f"FAIL: import {name}.onnx took {dt:.1f} s (bound {BOUND} s)")
    text = open(name + ".pbtxt").read()
    for op, n in want.items():
        got = len(re.findall(r'op \{ type: "%s"' % op, text))
        if got != n:
            sys.exit(f"FAIL: {name}.pbtxt has {got} {op} ops, not {n}")
    print(f"ok: {name}: {N} nodes imported in {dt:.2f} s")

# two BatchNormalization nodes on the same running statistics
inits = [helper.make_tensor(n, TensorProto.FLOAT, [2], v)
         for n, v in (("s", [1, 2]), ("b", [0, 1]), ("m", [0.5, 0.5]), ("v", [1, 4]))]
x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2, 2, 2])
g = helper.make_graph([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y1"]),
                       helper.make_node("Relu", ["y1"], ["r"]),
                       helper.make_node("BatchNormalization", ["r", "s", "b", "m", "v"], ["y2"]),
                       helper.make_node("Relu", ["y2"], ["y3"])], "g", [x4],
                      [helper.make_tensor_value_info("y3", TensorProto.FLOAT, [None, 2, 2, 2])], inits)
open("bn2.onnx", "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
r = subprocess.run([PR, "import", "bn2.onnx", "-o", "bn2.pbtxt", "--params-out", "bn2p"], capture_output=True, text=True)
if r.returncode != 0:
    sys.exit(f"FAIL: import bn2.onnx: exit {r.returncode}\n{r.stdout}{r.stderr}")
print("ok: two BatchNormalization nodes sharing their statistics")

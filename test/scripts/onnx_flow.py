# onnx_flow.py — ONNX Scan, Loop and If through `paddle-run import` and
# `infer`, against NumPy: a Scan (opset 9+) with two states, reverse
# directions and an outer-scope initializer read in its body; a Loop with
# a constant trip count whose body reads its iteration number, an outer
# value and carries a state, giving the stacked scan output; an If whose
# condition is a constant (the chosen branch). Then what is refused: an If
# whose condition is computed at run time, a Loop whose body computes its
# exit condition — each exit 2 naming the node.
import os, subprocess, sys
import numpy as np

try:
    import onnx
    from onnx import helper, numpy_helper, TensorProto
except ImportError:
    print("skipped: python3-onnx is not installed")
    sys.exit(77)

PR = os.environ["PR"]
rng = np.random.default_rng(3)
F = TensorProto.FLOAT


def run(*args, expect=0):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    if r.returncode != expect:
        sys.exit(f"FAIL: paddle-run {' '.join(args)}: exit {r.returncode}, expected {expect}\n{r.stdout}{r.stderr}")
    return r.stdout + r.stderr


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def save(name, graph, opset):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, f"{name}.onnx")


def import_and_run(name, feeds, fetch):
    run("import", f"{name}.onnx", "-o", f"{name}.pbtxt", "--params-out", f"{name}.params")
    args = ["infer", f"{name}.pbtxt"]
    if os.listdir(f"{name}.params"):  # an If's constant condition alone is no value the net needs
        args += ["--params", f"{name}.params"]
    for k, v in feeds.items():
        np.save(f"{name}.{k}.npy", v)
        args += ["--data", f"{k}={name}.{k}.npy"]
    for k in fetch:
        args += ["--fetch", f"{k}={name}.out.{k}.npy"]
    run(*args)
    return {k: np.load(f"{name}.out.{k}.npy") for k in fetch}


def check(name, got, want):
    for k, w in want.items():
        g = got[k]
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-6, atol=1e-6):
            sys.exit(f"FAIL: {name} {k}: got {g.shape}\n{g}\nwant {w.shape}\n{w}")
    print(f"ok: {name}")


# Scan: s1 += x_t * w (w read from outside), s2 = s2 * 0.5 + x_t; outputs
# s1 and tanh(s2) per step; every direction reverse.
T, D = 5, 3
x = rng.standard_normal((T, D)).astype(np.float32)
w = rng.standard_normal(D).astype(np.float32)
s10 = rng.standard_normal(D).astype(np.float32)
half = numpy_helper.from_array(np.array([0.5], np.float32), "half")
body = helper.make_graph(
    [helper.make_node("Mul", ["xt", "w"], ["xw"]),
     helper.make_node("Add", ["s1", "xw"], ["s1o"]),
     helper.make_node("Mul", ["s2", "half"], ["s2h"]),
     helper.make_node("Add", ["s2h", "xt"], ["s2o"]),
     helper.make_node("Tanh", ["s2o"], ["y2"]),
     helper.make_node("Identity", ["s1o"], ["y1"])],
    "scan_body", [vi("s1", F, [D]), vi("s2", F, [D]), vi("xt", F, [D])],
    [vi("s1o", F, [D]), vi("s2o", F, [D]), vi("y1", F, [D]), vi("y2", F, [D])])
g = helper.make_graph(
    [helper.make_node("Scan", ["s1_0", "s2_0", "x"], ["s1_T", "s2_T", "ys1", "ys2"], body=body, num_scan_inputs=1,
                      scan_input_directions=[1], scan_output_directions=[1])],
    "scan", [vi("x", F, [T, D])], [vi("s1_T", F, [D]), vi("s2_T", F, [D]), vi("ys1", F, [T, D]), vi("ys2", F, [T, D])],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(s10, "s1_0"),
     numpy_helper.from_array(np.zeros(D, np.float32), "s2_0"), half])
save("scan", g, 11)
s1, s2 = s10.astype(np.float64), np.zeros(D)
ys1, ys2 = np.zeros((T, D)), np.zeros((T, D))
for t in reversed(range(T)):
    s1 = s1 + x[t] * w
    s2 = s2 * 0.5 + x[t]
    ys1[t], ys2[t] = s1, np.tanh(s2)
got = import_and_run("scan", {"x": x}, ["s1_T", "s2_T", "ys1", "ys2"])
check("Scan reverse, two states, an outer value", got, {"s1_T": s1, "s2_T": s2, "ys1": ys1, "ys2": ys2})

# Loop: 4 iterations; y = y * w2 + float(i); scan output y.
M = 4
y0 = rng.standard_normal((2, 3)).astype(np.float32)
w2 = rng.standard_normal((2, 3)).astype(np.float32)
body = helper.make_graph(
    [helper.make_node("Identity", ["c_in"], ["c_out"]),
     helper.make_node("Cast", ["i"], ["fi"], to=F),
     helper.make_node("Mul", ["y_in", "w2"], ["yw"]),
     helper.make_node("Add", ["yw", "fi"], ["y_out"]),
     helper.make_node("Identity", ["y_out"], ["y_scan"])],
    "loop_body", [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("y_in", F, [2, 3])],
    [vi("c_out", TensorProto.BOOL, []), vi("y_out", F, [2, 3]), vi("y_scan", F, [2, 3])])
g = helper.make_graph(
    [helper.make_node("Loop", ["M", "cond", "y"], ["y_last", "y_all"], body=body)],
    "loop", [vi("y", F, [2, 3])], [vi("y_last", F, [2, 3]), vi("y_all", F, [M, 2, 3])],
    [numpy_helper.from_array(np.array(M, np.int64), "M"), numpy_helper.from_array(np.array(True), "cond"),
     numpy_helper.from_array(w2, "w2")])
save("loop", g, 13)
yy, all_ = y0.astype(np.float64), []
for i in range(M):
    yy = yy * w2 + i
    all_.append(yy)
got = import_and_run("loop", {"y": y0}, ["y_last", "y_all"])
check("Loop of a constant trip count, iteration number, an outer value", got, {"y_last": yy, "y_all": np.stack(all_)})

# If on a constant condition: the else branch, reading an outer value.
then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t_out"])], "then", [], [vi("t_out", F, [2, 3])])
else_g = helper.make_graph([helper.make_node("Tanh", ["x"], ["e_out"])], "else", [], [vi("e_out", F, [2, 3])])
g = helper.make_graph([helper.make_node("If", ["c"], ["out"], then_branch=then_g, else_branch=else_g)], "if",
                      [vi("x", F, [2, 3])], [vi("out", F, [2, 3])], [numpy_helper.from_array(np.array(False), "c")])
save("if", g, 13)
xi = rng.standard_normal((2, 3)).astype(np.float32)
check("If on a constant condition", import_and_run("if", {"x": xi}, ["out"]), {"out": np.tanh(xi)})

# refused: a run-time condition, a computed exit condition
g = helper.make_graph([helper.make_node("Greater", ["x", "z"], ["c"], name="gt") if False else
                       helper.make_node("Cast", ["x"], ["c"], to=TensorProto.UINT8),
                       helper.make_node("If", ["c"], ["out"], name="choose", then_branch=then_g, else_branch=else_g)],
                      "if_rt", [vi("x", F, [2, 3])], [vi("out", F, [2, 3])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "if_rt.onnx")
msg = run("import", "if_rt.onnx", "-o", "if_rt.pbtxt", expect=2)
assert '"choose" (If, opset 13)' in msg and "condition" in msg, msg
body = helper.make_graph(
    [helper.make_node("Cast", ["y_in"], ["c_out"], to=TensorProto.BOOL),
     helper.make_node("Identity", ["y_in"], ["y_out"])],
    "loop_body", [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("y_in", F, [2, 3])],
    [vi("c_out", TensorProto.BOOL, []), vi("y_out", F, [2, 3])])
g = helper.make_graph(
    [helper.make_node("Loop", ["M", "cond", "y"], ["y_last"], name="until", body=body)],
    "loop_rt", [vi("y", F, [2, 3])], [vi("y_last", F, [2, 3])],
    [numpy_helper.from_array(np.array(M, np.int64), "M"), numpy_helper.from_array(np.array(True), "cond")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "loop_rt.onnx")
msg = run("import", "loop_rt.onnx", "-o", "loop_rt.pbtxt", expect=2)
assert '"until" (Loop, opset 13)' in msg and "data-dependent exit" in msg, msg
print("ok: a run-time If condition and a computed Loop condition are refused, naming the node")

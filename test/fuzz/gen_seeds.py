# gen_seeds.py — the large seed inputs of the fuzz targets, written at fuzz
# time (`make fuzz` runs it) rather than committed: hundreds of slots,
# nesting as deep as each format allows and deeper, names of 600 bytes and
# more. Usage: python3 gen_seeds.py OUT_DIR (writes OUT_DIR/fuzz_NAME/*).
# The ONNX seeds need python3-onnx; without it they are left out (said so).
import os, struct, sys
import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else "build-fuzz/seeds"
LONG = "n" * 600


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


# ---- NetDesc (fuzz_netdesc, fuzz_textformat) -----------------------------------
def params_net(n, op, name="p"):
    lines = ['name: "wide"']
    lines += ['var { name: "%s%d" shape: [2] kind: PARAM }' % (name, i) for i in range(n)]
    ins = ", ".join('"%s%d"' % (name, i) for i in range(n))
    attrs = ' attrs { key: "axis" value { i: 0 } }' if op == "concat" else ""
    lines.append('op { type: "%s" inputs: [%s] outputs: "c"%s }' % (op, ins, attrs))
    lines.append('op { type: "mean" inputs: "c" outputs: "loss" }')
    lines.append('train { loss: "loss" optimizer { type: "adam" lr: 0.1 clip_norm: 1 '
                 'schedule { type: "step" step: 10 gamma: 0.5 } } }')
    return "\n".join(lines) + "\n"


def chain_net(n):
    lines = ['name: "chain"', 'var { name: "x" shape: [-1, 4] }']
    prev = "x"
    for i in range(n):
        op = ("relu", "sigmoid", "tanh")[i % 3]
        lines.append('op { type: "%s" inputs: "%s" outputs: "h%d" }' % (op, prev, i))
        prev = "h%d" % i
    lines.append('op { type: "mean" inputs: "%s" outputs: "loss" }' % prev)
    lines.append('train { loss: "loss" }')
    return "\n".join(lines) + "\n"


def long_names_net():
    a, b = LONG + "1", LONG + "2"
    return f"""name: "{LONG}"
var {{ name: "{LONG}x" shape: [-1, 3] }}
op {{ type: "fc" inputs: ["{LONG}x", "{a}", "{a}b"] outputs: "{a}h" attrs {{ key: "size" value {{ i: 3 }} }} }}
op {{ type: "fc" inputs: ["{a}h", "{b}", "{b}b"] outputs: "{b}h" attrs {{ key: "size" value {{ i: 1 }} }} }}
op {{ type: "mean" inputs: "{b}h" outputs: "loss" }}
train {{ loss: "loss" optimizer {{ type: "momentum" lr: 0.1 }} }}
"""


def run_attr(block, key="step_block"):
    return ' attrs { key: "%s" value { type: BLOCK block: "%s" } }' % (key, block)


def nested_blocks_net(n, var="v%d"):
    """block b<i> is run by the one op of b<i-1>; the top-level op runs b0;
    each declares var % i (one name for all: each redeclares the one above)"""
    lines = ['name: "nested"', 'var { name: "x" shape: [-1, 4] }',
             'op { type: "relu" inputs: "x" outputs: "y"%s }' % run_attr("b0")]
    for i in range(n):
        inner = run_attr("b%d" % (i + 1)) if i + 1 < n else ""
        name = var % i if "%" in var else var
        lines.append('block { name: "b%d" var { name: "%s" shape: [-1, 4] } '
                     'op { type: "tanh" inputs: "x" outputs: "h%d"%s } }' % (i, name, i, inner))
    return "\n".join(lines) + "\n"


def wide_blocks_net(n, cycle=False):
    """n sibling blocks, each run by a top-level op (or, with cycle, the last
    two run each other) and each declaring the same temporary name"""
    lines = ['name: "wide_blocks"', 'var { name: "x" shape: [-1, 4] }']
    for i in range(n - (2 if cycle else 0)):
        lines.append('op { type: "relu" inputs: "x" outputs: "y%d"%s }' % (i, run_attr("s%d" % i)))
    for i in range(n):
        attr = run_attr("s%d" % (n - 1 if i == n - 2 else n - 2)) if cycle and i >= n - 2 else ""
        lines.append('block { name: "s%d" var { name: "t" } var { name: "p%d" kind: PARAM } '
                     'op { type: "sigmoid" inputs: "x" outputs: "t"%s } }' % (i, i, attr))
    return "\n".join(lines) + "\n"


def nested_recurrent_net(n):
    """block r<i> holds a recurrent op running r<i+1>: n recurrent ops nested"""
    rec = ('op { type: "recurrent" inputs: ["%s"] outputs: ["%s"] attrs { key: "step_block" value { block: "%s" } } '
           'attrs { key: "inputs" value { strings: "%s" } } attrs { key: "outputs" value { strings: "%s" } } }')
    lines = ['name: "nested_recurrent"', 'var { name: "x" shape: [-1, 3, 3, 4] }', rec % ("x", "y", "r0", "u0", "o0")]
    for i in range(n):
        inner = rec % ("u%d" % i, "o%d" % i, "r%d" % (i + 1), "u%d" % (i + 1), "o%d" % (i + 1)) if i + 1 < n else \
            'op { type: "tanh" inputs: "u%d" outputs: "o%d" }' % (i, i)
        lines.append('block { name: "r%d" %s }' % (i, inner))
    return "\n".join(lines) + "\n"


def rnn_cell_net():
    return """name: "rnn_cell"
var { name: "x" shape: [-1, 5, 4] }
var { name: "h0" shape: [-1, 8] }
op { type: "recurrent" inputs: ["x", "h0"] outputs: ["hs", "h_last"]
     attrs { key: "step_block" value { type: BLOCK block: "cell" } } attrs { key: "inputs" value { strings: "x_t" } }
     attrs { key: "prev_states" value { strings: "h_prev" } } attrs { key: "states" value { strings: "h" } }
     attrs { key: "outputs" value { strings: "h" } } }
block {
  name: "cell"
  comment: "h = tanh(x_t W + h_prev U + b)"
  var { name: "cell.u" shape: [8, 8] kind: PARAM }
  op { type: "fc" inputs: ["x_t", "cell.w", "cell.b"] outputs: "a" attrs { key: "size" value { i: 8 } } }
  op { type: "mul" inputs: ["h_prev", "cell.u"] outputs: "c" }
  op { type: "elementwise_add" inputs: ["a", "c"] outputs: "s" }
  op { type: "tanh" inputs: "s" outputs: "h" }
}
"""


for t in ("fuzz_netdesc", "fuzz_textformat"):
    put(t, "blocks_rnn_cell.pbtxt", rnn_cell_net())
    put(t, "blocks_nested_90.pbtxt", nested_blocks_net(90))
    put(t, "recurrent_nested_2.pbtxt", nested_recurrent_net(2))
    put(t, "recurrent_nested_3000.pbtxt", nested_recurrent_net(3000))
    put(t, "blocks_nested_3000.pbtxt", nested_blocks_net(3000))
    put(t, "blocks_nested_redeclare_3000.pbtxt", nested_blocks_net(3000, "t"))
    put(t, "blocks_wide_2000.pbtxt", wide_blocks_net(2000))
    put(t, "blocks_cycle_2000.pbtxt", wide_blocks_net(2000, cycle=True))
    put(t, "concat_300.pbtxt", params_net(300, "concat"))
    put(t, "sum_300.pbtxt", params_net(300, "sum"))
    put(t, "params_5000.pbtxt", params_net(5000, "sum", "q"))
    put(t, "chain_2000.pbtxt", chain_net(2000))
    put(t, "long_names.pbtxt", long_names_net())
    put(t, "long_name_100k.pbtxt", 'name: "%s"\nvar { name: "%s" shape: [1] }\n' % ("x" * 100000, "y" * 100000))
put("fuzz_textformat", "nested_unknown.pbtxt", "train { optimizer { schedule " + "{ x " * 200 + "}" * 203 + "\n")

# ---- ONNX (fuzz_onnx) --------------------------------------------------------------


def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def ld(field, payload):  # a length-delimited field
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def nested_ifs(k):
    """A model of k If nodes, each the then_branch of the one outside it
    (GraphProto -> NodeProto -> AttributeProto -> GraphProto: 3 levels each)."""
    g = ld(2, b"g")
    for _ in range(k):
        attr = ld(1, b"then_branch") + varint(20 << 3) + varint(5) + ld(6, g)
        g = ld(1, ld(4, b"If") + ld(5, attr)) + ld(2, b"g")
    return varint(1 << 3) + varint(7) + ld(8, varint(2 << 3) + varint(13)) + ld(7, g)


put("fuzz_onnx", "nested_if_33.onnx", nested_ifs(33))  # 100 levels: the deepest accepted
put("fuzz_onnx", "nested_if_34.onnx", nested_ifs(34))  # 103: refused
put("fuzz_onnx", "nested_if_3000.onnx", nested_ifs(3000))
try:
    import onnx
    from onnx import helper, TensorProto as T
except ImportError:
    onnx = None
    print("gen_seeds: python3-onnx is not installed: the ONNX model seeds are left out")
if onnx:
    def model(nodes, inputs, outputs, inits=()):
        g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()

    x = helper.make_tensor_value_info("x", T.FLOAT, [None, 4])
    n = 300
    put("fuzz_onnx", "sum_300.onnx", model(
        [helper.make_node("Relu", ["x"], ["r%d" % i]) for i in range(n)] +
        [helper.make_node("Sum", ["r%d" % i for i in range(n)], ["y"])],
        [x], [helper.make_tensor_value_info("y", T.FLOAT, [None, 4])]))
    put("fuzz_onnx", "concat_300.onnx", model(
        [helper.make_node("Concat", ["x"] * n, ["y"], axis=1)],
        [x], [helper.make_tensor_value_info("y", T.FLOAT, [None, 4 * n])]))
    put("fuzz_onnx", "chain_1000.onnx", model(
        [helper.make_node(("Relu", "Sigmoid", "Tanh")[i % 3], ["x" if i == 0 else "h%d" % (i - 1)], ["h%d" % i])
         for i in range(1000)],
        [x], [helper.make_tensor_value_info("h999", T.FLOAT, [None, 4])]))
    w = helper.make_tensor(LONG + "w", T.FLOAT, [4, 3], np.arange(12, dtype=np.float32).tolist())
    b = helper.make_tensor(LONG + "b", T.FLOAT, [3], [1, 2, 3])
    xl = helper.make_tensor_value_info(LONG + "x", T.FLOAT, [None, 4])
    put("fuzz_onnx", "long_names_gemm.onnx", model(
        [helper.make_node("Gemm", [LONG + "x", LONG + "w", LONG + "b"], [LONG + "g"], name=LONG),
         helper.make_node("Softmax", [LONG + "g"], [LONG + "y"], axis=1)],
        [xl], [helper.make_tensor_value_info(LONG + "y", T.FLOAT, [None, 3])], [w, b]))
    u8 = helper.make_tensor("u", T.UINT8, [4], [0, 1, 255, 7])
    put("fuzz_onnx", "uint8_init.onnx", model(
        [helper.make_node("Cast", ["u"], ["y"], to=T.FLOAT)],
        [], [helper.make_tensor_value_info("y", T.FLOAT, [4])], [u8]))

# ---- .npy and IDX (fuzz_npy, fuzz_idx) ----------------------------------------------
def npy(arr, pad=0):
    import io
    f = io.BytesIO()
    np.save(f, arr)
    data = f.getvalue()
    if pad:  # a header padded with spaces to a longer (version 2) header
        hlen = struct.unpack("<H", data[8:10])[0]
        header = data[10:10 + hlen].rstrip(b"\n") + b" " * pad + b"\n"
        data = b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header + data[10 + hlen:]
    return data


put("fuzz_npy", "f32_256x256.npy", npy(np.arange(65536, dtype=np.float32).reshape(256, 256)))
put("fuzz_npy", "dims_32.npy", npy(np.zeros((1,) * 32, np.float32)))
put("fuzz_npy", "long_header.npy", npy(np.zeros((2, 3), np.int64), pad=70000))
put("fuzz_idx", "ubyte_64x64x64", struct.pack(">BBBB", 0, 0, 8, 3) + struct.pack(">III", 64, 64, 64) + bytes(64 ** 3))
put("fuzz_idx", "float_4000x64", struct.pack(">BBBB", 0, 0, 0x0D, 2) + struct.pack(">II", 4000, 64) + bytes(4000 * 64 * 4))

# ---- checkpoint manifests (fuzz_checkpoint) -----------------------------------------
entries = "".join('file {\n  var: "%s%d"\n  file: "w.npy"\n  dtype: FLOAT32\n  shape: 2\n  shape: 3\n  bytes: 152\n}\n'
                  % (LONG, i) for i in range(300))
put("fuzz_checkpoint", "files_300_long.pbtxt",
    'format_version: 1\nnet: "%s"\nstep: 1\noptimizer: "adam"\nseed: 1\n%slr: 0.01\n' % (LONG, entries))

# ---- the command line (fuzz_cli): first byte picks the option table ------------------
put("fuzz_cli", "args_2000", b"\x00" + b"\x00".join(b"--set=train.epochs=%d" % i for i in range(2000)))
put("fuzz_cli", "long_args", b"\x00" + b"\x00".join([b"net.pbtxt", b"--data", b"x" * 30000 + b"=f.npy", b"--lr", b"1" * 20000]))
put("fuzz_cli", "positionals_100", b"\x02" + b"\x00".join(b"p%d" % i for i in range(100)))
print("gen_seeds: written in", OUT)

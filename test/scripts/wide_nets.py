# wide_nets.py — no fixed-size list or name buffer on the way to the
# gradients and the update ops (issues 18.8, 18.14):
#   * a concat of 200 inputs gets its backward op (the grad op's lists were
#     256 and 128 slots: `desc --backward` crashed), and the output reloads;
#   * a net of 5,000 parameters gets 5,000 update ops (only the first 4,096
#     did: the rest were silently left untrained);
#   * two parameters whose 601-byte names differ only in the last byte each
#     get their own gradient (names were cut at 512 bytes, so they shared
#     one: gradcheck failed, and the `desc --backward` output did not reload);
#   * ONNX export of ops on 600-byte names gives each value in between its
#     own name (they were cut at 512 bytes: two Flatten nodes wrote one
#     value, and the model did not import again);
#   * a recurrent op with 300 states (the names an op feeds its block were
#     a list of 256: the rest were looked up outside and refused).
import os, re, subprocess, sys
import numpy as np

PR = os.environ["PR"]


def run(*args):
    return subprocess.run([PR, *args], capture_output=True, text=True)


def ok(*args):
    r = run(*args)
    if r.returncode != 0:
        sys.exit(f"FAIL: paddle-run {' '.join(args)[:200]}: exit {r.returncode}\n{(r.stdout + r.stderr)[-2000:]}")
    return r.stdout


def params_net(path, n, op):
    lines = ['name: "wide"']
    lines += ['var { name: "p%d" shape: [1] dtype: FLOAT32 kind: PARAM }' % i for i in range(n)]
    ins = ", ".join('"p%d"' % i for i in range(n))
    attrs = ' attrs { key: "axis" value { i: 0 } }' if op == "concat" else ""
    lines.append('op { type: "%s" inputs: [%s] outputs: "c"%s }' % (op, ins, attrs))
    lines.append('op { type: "mean" inputs: "c" outputs: "loss" }')
    lines.append('train { loss: "loss" optimizer { type: "sgd" lr: 0.1 } }')
    open(path, "w").write("\n".join(lines) + "\n")


# concat of 200 inputs
params_net("cat.pbtxt", 200, "concat")
out = ok("desc", "--backward", "cat.pbtxt")
open("cat_bw.pbtxt", "w").write(out)
m = re.search(r'op \{\s*type: "concat_grad"(.*?)\n\s*\}\n', out, re.S)
if not m:
    sys.exit("FAIL: no concat_grad op in desc --backward")
grads = re.findall(r'"p(\d+)@GRAD"', m.group(1))
if sorted(map(int, grads)) != list(range(200)):
    sys.exit(f"FAIL: concat_grad writes {len(grads)} of the 200 gradients")
ok("check", "cat_bw.pbtxt")

# 5,000 parameters: one update op each
params_net("many.pbtxt", 5000, "sum")
out = ok("desc", "--optimizer", "sgd", "many.pbtxt")
updated = set(re.findall(r'type: "sgd"\s*inputs: "p(\d+)"', out))
if len(updated) != 5000:
    sys.exit(f"FAIL: {len(updated)} of 5000 parameters get an sgd op")

# long names that differ after byte 512
a = "w" * 600
open("long.pbtxt", "w").write(f"""name: "long"
var {{ name: "{a}1" shape: [1] dtype: FLOAT32 kind: PARAM }}
var {{ name: "{a}2" shape: [1] dtype: FLOAT32 kind: PARAM }}
op {{ type: "scale" inputs: "{a}1" outputs: "s" attrs {{ key: "scale" value {{ f: 3 }} }} }}
op {{ type: "sum" inputs: ["s", "{a}2"] outputs: "t" }}
op {{ type: "mean" inputs: "t" outputs: "loss" }}
train {{ loss: "loss" optimizer {{ type: "adam" lr: 0.1 }} }}
""")
ok("gradcheck", "long.pbtxt", "--elements", "0")
out = ok("desc", "--backward", "long.pbtxt")
for s in ("1", "2"):
    if f'"{a}{s}@GRAD"' not in out:
        sys.exit(f"FAIL: no gradient named {a[:8]}...{s}@GRAD")
open("long_bw.pbtxt", "w").write(out)
ok("check", "long_bw.pbtxt")
out = ok("desc", "--optimizer", "adam", "long.pbtxt")
for s in ("1", "2"):
    for state in ("MOMENT1", "MOMENT2"):
        if f'"{a}{s}@{state}"' not in out:
            sys.exit(f"FAIL: no optimizer state {a[:8]}...{s}@{state}")
open("long_opt.pbtxt", "w").write(out)
ok("check", "long_opt.pbtxt")

# export: the values in between named after 600-byte names
x, o = "x" * 600, "o" * 600
fc = 'op {{ type: "fc" inputs: ["{x}", "w{i}", "b{i}"] outputs: "{o}{i}" attrs {{ key: "size" value {{ i: 3 }} }} attrs {{ key: "act" value {{ s: "relu" }} }} }}'
open("lx.pbtxt", "w").write(f'name: "lx"\nvar {{ name: "{x}" shape: [-1, 2, 2] }}\n' +
                            "\n".join(fc.format(x=x, o=o, i=i) for i in (1, 2)) + "\n")
os.mkdir("lxp")
for i in (1, 2):
    np.save(f"lxp/w{i}.npy", np.full((4, 3), i, np.float32))
    np.save(f"lxp/b{i}.npy", np.zeros(3, np.float32))
ok("export", "lx.pbtxt", "--params", "lxp", "-o", "lx.onnx", "--fetch", o + "1", "--fetch", o + "2")
ok("import", "lx.onnx", "-o", "lx2.pbtxt", "--params-out", "lx2p")
np.save("in.npy", np.ones((2, 2, 2), np.float32))
for i in (1, 2):
    ok("infer", "lx2.pbtxt", "--params", "lx2p", "--data", f"{x}=in.npy", "--fetch", f"{o}{i}=out{i}.npy")
    got = np.load(f"out{i}.npy")
    if not np.array_equal(got, np.full((2, 3), 4.0 * i, np.float32)):
        sys.exit(f"FAIL: the exported and imported fc #{i} gives {got.tolist()}")
# a recurrent op of 300 states, each h_i = h_prev_i + x_t: after 3 steps of
# ones every final state is 3
n = 300
rec = ['name: "wide_rnn"', 'var { name: "x" shape: [-1, 3, 1] }', "block {", '  name: "cell"']
rec += ['  var { name: "hp%d" shape: [-1, 1] }' % i for i in range(n)]
rec += ['  op { type: "elementwise_add" inputs: ["hp%d", "x_t"] outputs: "h%d" }' % (i, i) for i in range(n)]
rec += ["}", 'op { type: "recurrent" inputs: "x" outputs: ["hs", %s]' % ", ".join('"hT%d"' % i for i in range(n)),
        '  attrs { key: "step_block" value { block: "cell" } } attrs { key: "inputs" value { strings: "x_t" } }',
        '  attrs { key: "outputs" value { strings: "h0" } }',
        '  attrs { key: "prev_states" value { strings: [%s] } }' % ", ".join('"hp%d"' % i for i in range(n)),
        '  attrs { key: "states" value { strings: [%s] } } }' % ", ".join('"h%d"' % i for i in range(n))]
open("wide_rnn.pbtxt", "w").write("\n".join(rec) + "\n")
np.save("ones.npy", np.ones((2, 3, 1), np.float32))
ok("infer", "wide_rnn.pbtxt", "--data", "x=ones.npy", "--fetch", "hT299=last.npy", "--fetch", "hT0=first.npy")
for f in ("first.npy", "last.npy"):
    if not np.array_equal(np.load(f), np.full((2, 1), 3, np.float32)):
        sys.exit(f"FAIL: the 300-state recurrent op gives {np.load(f).tolist()} in {f}")
print("ok: concat of 200, 5000 parameters, 601-byte names, export of 600-byte names, 300 recurrent states")

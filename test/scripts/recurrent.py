# recurrent.py — the recurrent op against references and finite differences:
#   1. `infer` of a hand-written tanh cell, forward and reversed, with per-row
#      lengths 0..T, an initial state given for one op and left at zero for
#      the other, matches a float64 NumPy loop (and PyTorch's nn.RNN on packed
#      sequences where PyTorch is installed) to 1e-5: stacked outputs zero
#      past each row's length, final states held at its last step;
#   2. `gradcheck` in float64 passes on every element of every parameter of
#      nets with: a cell whose state is also its output; two stacked ops, the
#      second reversed, with all-different lengths (one 0, two full); X and H0
#      computed from parameters (so their gradients are checked too); the
#      final state read outside the op; a two-state (LSTM) cell; fc weight
#      gradients summed after the loop over the stacked steps (an fc of x_t
#      with a fused activation) beside those summed step by step (an fc of a
#      previous state, of a reshape's view, a weight two fcs share);
#   3. training on the CPU lowers the loss of the stacked net, and a second
#      run gives the same bytes (deterministic); the two-state cell and the
#      mixed one, whose independent ops run side by side on 2 and 3 threads
#      (`time` marks them), save the same bytes twice on each thread count
#      and agree across counts to float32's rounding.
import json, os, subprocess
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(11)


def run(*args, ok=True):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stdout + r.stderr
    return r.returncode, r.stdout + r.stderr


CELL = """
block {
  name: "%(b)s"
  var { name: "h_prev" shape: [-1, 4] }
  op { type: "concat" inputs: ["x_t", "h_prev"] outputs: "xh" attrs { key: "axis" value { i: 1 } } }
  op { type: "fc" inputs: ["xh", "%(b)s.w", "%(b)s.b"] outputs: "a" attrs { key: "size" value { i: 4 } } }
  op { type: "tanh" inputs: "a" outputs: "h" }
}
"""
RNN = """op { type: "recurrent" inputs: [%(ins)s] outputs: ["%(o)s", "%(o)sT"]
     attrs { key: "step_block" value { block: "%(b)s" } } attrs { key: "inputs" value { strings: "x_t" } }
     attrs { key: "prev_states" value { strings: "h_prev" } } attrs { key: "states" value { strings: "h" } }
     attrs { key: "outputs" value { strings: "h" } } attrs { key: "reverse" value { b: %(rev)s } } }
"""

# ---- 1. forward against NumPy (and PyTorch) -----------------------------------
B, T, F, H = 7, 6, 3, 4
net = ('var { name: "x" shape: [-1, 6, 3] }\nvar { name: "h0" shape: [-1, 4] }\n'
       'var { name: "len" shape: [-1] dtype: INT64 }\n')
net += CELL % {"b": "fw"} + CELL % {"b": "bw"}
net += RNN % {"ins": '"x", "h0", "len"', "o": "f", "b": "fw", "rev": "false"}
net += RNN % {"ins": '"x", "", "len"', "o": "r", "b": "bw", "rev": "true"}
open("fwd.pbtxt", "w").write(net)
x = rng.normal(size=(B, T, F)).astype(np.float32)
h0 = rng.normal(size=(B, H)).astype(np.float32)
lens = np.array([6, 3, 0, 1, 5, 6, 2], np.int64)
np.save("x.npy", x), np.save("h0.npy", h0), np.save("len.npy", lens)
os.makedirs("p", exist_ok=True)
P = {}
for b in ("fw", "bw"):
    P[b] = (rng.normal(size=(F + H, H)) * 0.7).astype(np.float32), rng.normal(size=H).astype(np.float32)
    np.save(f"p/{b}.w.npy", P[b][0]), np.save(f"p/{b}.b.npy", P[b][1])
run("infer", "fwd.pbtxt", "--params", "p", "--data", "x=x.npy", "--data", "h0=h0.npy", "--data", "len=len.npy",
    "--fetch", "f=f.npy", "--fetch", "fT=fT.npy", "--fetch", "r=r.npy", "--fetch", "rT=rT.npy", "--batch-size", "4")


def reference(w, b, h_init, reverse):
    w, b = w.astype(np.float64), b.astype(np.float64)
    out, hT = np.zeros((B, T, H)), np.zeros((B, H))
    for i in range(B):
        h = h_init[i].astype(np.float64)
        steps = range(lens[i] - 1, -1, -1) if reverse else range(lens[i])
        for t in steps:
            h = np.tanh(np.concatenate([x[i, t], h]) @ w + b)
            out[i, t] = h
        hT[i] = h
    return out, hT


for name, ref in (("f", reference(*P["fw"], h0, False)), ("r", reference(*P["bw"], np.zeros((B, H)), True))):
    for got, want in ((np.load(f"{name}.npy"), ref[0]), (np.load(f"{name}T.npy"), ref[1])):
        assert got.shape == want.shape, (got.shape, want.shape)
        err = np.max(np.abs(got - want))
        assert err < 1e-5, f"{name}: max error {err} against NumPy"
print("forward and reversed, with lengths 6,3,0,1,5,6,2: match NumPy within 1e-5")

try:
    import torch
except ImportError:
    torch = None
if torch is None:
    print("PyTorch is not installed (python3-torch): compared with NumPy only")
else:
    rnn = torch.nn.RNN(F, H, batch_first=True, bidirectional=True, dtype=torch.float64)
    with torch.no_grad():
        for sfx, b in (("", "fw"), ("_reverse", "bw")):
            w, bias = P[b]
            getattr(rnn, "weight_ih_l0" + sfx).copy_(torch.tensor(w[:F].T.astype(np.float64)))
            getattr(rnn, "weight_hh_l0" + sfx).copy_(torch.tensor(w[F:].T.astype(np.float64)))
            getattr(rnn, "bias_ih_l0" + sfx).copy_(torch.tensor(bias.astype(np.float64)))
            getattr(rnn, "bias_hh_l0" + sfx).zero_()
    keep = lens > 0  # packed sequences take no empty row
    xs = torch.tensor(x[keep].astype(np.float64))
    init = torch.stack([torch.tensor(h0[keep].astype(np.float64)), torch.zeros(int(keep.sum()), H, dtype=torch.float64)])
    packed = torch.nn.utils.rnn.pack_padded_sequence(xs, torch.tensor(lens[keep]), batch_first=True, enforce_sorted=False)
    out, hn = rnn(packed, init)
    out, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
    out = out.detach().numpy()
    for got, want in ((np.load("f.npy")[keep], out[..., :H]), (np.load("r.npy")[keep], out[..., H:]),
                      (np.load("fT.npy")[keep], hn[0].detach().numpy()), (np.load("rT.npy")[keep], hn[1].detach().numpy())):
        err = np.max(np.abs(got - want))
        assert err < 1e-5, f"max error {err} against PyTorch"
    print(f"and PyTorch {torch.__version__}'s bidirectional nn.RNN on packed sequences within 1e-5")

# ---- 2. gradients against finite differences ------------------------------------
np.save("y.npy", rng.integers(0, 2, size=(8, 1)))
np.save("z.npy", rng.normal(size=(8, 2)).astype(np.float32))
np.save("x8.npy", rng.normal(size=(8, 5, 3)).astype(np.float32))
np.save("len8.npy", np.array([5, 3, 1, 4, 2, 5, 0, 3], np.int64))
FILES = {"x": "x8.npy", "y": "y.npy", "z": "z.npy", "len": "len8.npy"}
DECL = {"x": "shape: [-1, 5, 3]", "z": "shape: [-1, 2]", "len": "shape: [-1] dtype: INT64", "y": "shape: [-1, 1] dtype: INT64"}


def with_data(text):
    """The net with declarations and train.data for the data it reads."""
    used = [v for v in FILES if f'"{v}"' in text]
    head = "".join(f'var {{ name: "{v}" {DECL[v]} }}\n' for v in used)
    data = " ".join(f'data {{ var: "{v}" file: "{FILES[v]}" }}' for v in used)
    return head + text + ('train { loss: "avg_loss" batch_size: 8 epochs: 4 seed: 3 optimizer { type: "adam" lr: 0.05 }\n  '
                          + data + " }\n")


HEAD = ""
LOSS = """op { type: "fc" inputs: ["feat", "out.w", "out.b"] outputs: "logits" attrs { key: "size" value { i: 2 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "l1" }
"""
nets = {}
# a cell whose new state is also its output; the loss reads the final state
nets["simple"] = HEAD + CELL % {"b": "c"} + RNN % {"ins": '"x"', "o": "hs", "b": "c", "rev": "false"} + \
    'op { type: "identity" inputs: "hsT" outputs: "feat" }\n' + LOSS + \
    'op { type: "identity" inputs: "l1" outputs: "avg_loss" }\n'
# stacked, the second reversed, lengths, X and H0 from parameters, a zero
# initial state, both final states and the stacked outputs in the loss
nets["stacked"] = HEAD + """var { name: "w_in" kind: PARAM shape: [3] init { type: "uniform" min: 0.5 max: 1.5 } }
block {
  name: "cell"
  op { type: "concat" inputs: ["x_t", "h_prev"] outputs: "xh" attrs { key: "axis" value { i: 1 } } }
  op { type: "fc" inputs: ["xh", "cell.w", "cell.b"] outputs: "a" attrs { key: "size" value { i: 4 } } }
  op { type: "tanh" inputs: "a" outputs: "h" }
  op { type: "sigmoid" inputs: "a" outputs: "o" }
}
block {
  name: "back"
  var { name: "g_prev" shape: [-1, 3] }
  op { type: "fc" inputs: ["u_t", "back.w"] outputs: "p" attrs { key: "size" value { i: 3 } } }
  op { type: "fc" inputs: ["g_prev", "back.u", "back.b"] outputs: "q" attrs { key: "size" value { i: 3 } } }
  op { type: "elementwise_add" inputs: ["p", "q"] outputs: "pq" }
  op { type: "tanh" inputs: "pq" outputs: "g" }
}
op { type: "broadcast_mul" inputs: ["x", "w_in"] outputs: "xs" }
op { type: "fc" inputs: ["z", "h0.w"] outputs: "h0" attrs { key: "size" value { i: 4 } } }
op { type: "recurrent" inputs: ["xs", "h0", "len"] outputs: ["os", "hT"]
     attrs { key: "step_block" value { block: "cell" } } attrs { key: "inputs" value { strings: "x_t" } }
     attrs { key: "prev_states" value { strings: "h_prev" } } attrs { key: "states" value { strings: "h" } }
     attrs { key: "outputs" value { strings: "o" } } }
op { type: "recurrent" inputs: ["os", "", "len"] outputs: ["gs", "gT"]
     attrs { key: "step_block" value { block: "back" } } attrs { key: "inputs" value { strings: "u_t" } }
     attrs { key: "prev_states" value { strings: "g_prev" } } attrs { key: "states" value { strings: "g" } }
     attrs { key: "outputs" value { strings: "g" } } attrs { key: "reverse" value { b: true } } }
op { type: "concat" inputs: ["gT", "hT"] outputs: "feat" attrs { key: "axis" value { i: 1 } } }
""" + LOSS + """op { type: "mean" inputs: "gs" outputs: "l2" }
op { type: "sum" inputs: ["l1", "l2"] outputs: "avg_loss" }
"""
# an LSTM written out of ops: two states (h, c), four gates on concat(x_t, h)
nets["lstm"] = HEAD + """block {
  name: "lstm"
  var { name: "h_prev" shape: [-1, 3] }
  var { name: "c_prev" shape: [-1, 3] }
  op { type: "concat" inputs: ["x_t", "h_prev"] outputs: "xh" attrs { key: "axis" value { i: 1 } } }
  op { type: "fc" inputs: ["xh", "i.w", "i.b"] outputs: "ia" attrs { key: "size" value { i: 3 } } }
  op { type: "fc" inputs: ["xh", "f.w", "f.b"] outputs: "fa" attrs { key: "size" value { i: 3 } } }
  op { type: "fc" inputs: ["xh", "o.w", "o.b"] outputs: "oa" attrs { key: "size" value { i: 3 } } }
  op { type: "fc" inputs: ["xh", "g.w", "g.b"] outputs: "ga" attrs { key: "size" value { i: 3 } } }
  op { type: "sigmoid" inputs: "ia" outputs: "ig" }
  op { type: "sigmoid" inputs: "fa" outputs: "fg" }
  op { type: "sigmoid" inputs: "oa" outputs: "og" }
  op { type: "tanh" inputs: "ga" outputs: "gg" }
  op { type: "broadcast_mul" inputs: ["fg", "c_prev"] outputs: "fc" }
  op { type: "broadcast_mul" inputs: ["ig", "gg"] outputs: "igg" }
  op { type: "elementwise_add" inputs: ["fc", "igg"] outputs: "c" }
  op { type: "tanh" inputs: "c" outputs: "tc" }
  op { type: "broadcast_mul" inputs: ["og", "tc"] outputs: "h" }
}
op { type: "recurrent" inputs: ["x", "", "", "len"] outputs: ["hs", "hT", "cT"]
     attrs { key: "step_block" value { block: "lstm" } } attrs { key: "inputs" value { strings: "x_t" } }
     attrs { key: "prev_states" value { strings: ["h_prev", "c_prev"] } }
     attrs { key: "states" value { strings: ["h", "c"] } } attrs { key: "outputs" value { strings: "h" } } }
op { type: "concat" inputs: ["hT", "cT"] outputs: "feat" attrs { key: "axis" value { i: 1 } } }
""" + LOSS + 'op { type: "identity" inputs: "l1" outputs: "avg_loss" }\n'
# the fc gradients summed after the loop over the stacked steps (x_t, with a
# fused activation) and those that stay step by step: an fc of a previous
# state, of a view (reshape's output), and a weight two fcs share
nets["mixed"] = HEAD + """block {
  name: "mix"
  var { name: "h_prev" shape: [-1, 4] }
  op { type: "fc" inputs: ["x_t", "mix.wx", "mix.b"] outputs: "ax" attrs { key: "size" value { i: 4 } }
       attrs { key: "act" value { s: "sigmoid" } } }
  op { type: "reshape" inputs: "ax" outputs: "axr" attrs { key: "shape" value { ints: [0, 4] } } }
  op { type: "fc" inputs: ["axr", "mix.wr"] outputs: "ar" attrs { key: "size" value { i: 4 } } }
  op { type: "fc" inputs: ["h_prev", "mix.wh"] outputs: "ah" attrs { key: "size" value { i: 4 } } }
  op { type: "fc" inputs: ["ar", "mix.wh"] outputs: "ah2" attrs { key: "size" value { i: 4 } } }
  op { type: "sum" inputs: ["ax", "ah", "ah2"] outputs: "a" }
  op { type: "tanh" inputs: "a" outputs: "h" }
}
op { type: "recurrent" inputs: ["x", "", "len"] outputs: ["hs", "hT"]
     attrs { key: "step_block" value { block: "mix" } } attrs { key: "inputs" value { strings: "x_t" } }
     attrs { key: "prev_states" value { strings: "h_prev" } } attrs { key: "states" value { strings: "h" } }
     attrs { key: "outputs" value { strings: "h" } } attrs { key: "reverse" value { b: true } } }
op { type: "identity" inputs: "hT" outputs: "feat" }
""" + LOSS + """op { type: "mean" inputs: "hs" outputs: "l2" }
op { type: "sum" inputs: ["l1", "l2"] outputs: "avg_loss" }
"""
for name, text in nets.items():
    open(f"{name}.pbtxt", "w").write(with_data(text))
    for threads in ("1", "2", "3"):  # 2 and 3: the cell's independent ops side by side, 4 over 3 threads
        rc, out = run("gradcheck", f"{name}.pbtxt", "--elements", "0", "--rows", "8", "--threads", threads)
        print(f"gradcheck {name} --threads {threads}: " + out.strip().splitlines()[0] + "; " +
              out.strip().splitlines()[-1].split(":")[0])

# ---- 3. training lowers the loss, the same bytes twice ----------------------------
def final_loss(save):
    rc, out = run("train", "stacked.pbtxt", "--save", save, "--epochs", "30", "--log", save + ".log")
    return float([l for l in out.splitlines() if l.startswith("epoch 30 done")][0].split("avg_loss")[1].split()[0])


first = [l for l in run("train", "stacked.pbtxt", "--epochs", "1")[1].splitlines() if "done" in l][0]
start = float(first.split("avg_loss")[1].split()[0])
end = final_loss("ck1")
assert end < 0.7 * start, f"30 epochs took the loss from {start} to {end} only"
final_loss("ck2")
for f in sorted(os.listdir("ck1/step-00000030")):
    if f.endswith(".npy"):
        assert open(f"ck1/step-00000030/{f}", "rb").read() == open(f"ck2/step-00000030/{f}", "rb").read(), f
print(f"training: loss {start:.4f} -> {end:.4f} in 30 epochs; two runs save the same bytes")


# ---- the ops of a step block side by side: the same bytes on a rerun --------------
def train_bytes(name, threads, save):
    run("train", f"{name}.pbtxt", "--save", save, "--epochs", "8", "--threads", threads)
    d = f"{save}/step-00000008"
    return {f: np.load(f"{d}/{f}") for f in sorted(os.listdir(d)) if f.endswith(".npy")}, \
        {f: open(f"{d}/{f}", "rb").read() for f in sorted(os.listdir(d)) if f.endswith(".npy")}


for name in ("lstm", "mixed"):
    vals = {}
    for threads in ("1", "2", "3"):
        a, abytes = train_bytes(name, threads, f"{name}_t{threads}_a")
        b, bbytes = train_bytes(name, threads, f"{name}_t{threads}_b")
        assert abytes == bbytes, f"{name} on {threads} threads: a rerun saved other bytes"
        vals[threads] = a
    for threads in ("2", "3"):
        for f, v in vals["1"].items():
            err = np.max(np.abs(vals[threads][f] - v)) / max(1e-3, np.max(np.abs(v)))
            assert err < 1e-4, f"{name}: {f} on {threads} threads is {err} from 1 thread's"
    print(f"{name}: 8 epochs on 1, 2 and 3 threads, the same bytes on a rerun, within 1e-4 across counts")

rc, out = run("time", "lstm.pbtxt", "--threads", "2", "--iterations", "3")
side = [l.split()[1] for l in out.splitlines() if l.endswith("  side")]
assert "ran side by side" in out and side.count("fc") == 4 and side.count("fc_grad") == 4, out
rc, out = run("time", "lstm.pbtxt", "--threads", "2", "--iterations", "3", "--json")
blocks = json.loads(out)["blocks"]
assert [b["name"] for b in blocks] == ["lstm"], blocks
assert sorted(o["name"] for o in blocks[0]["ops"] if o["side"] and o["type"] == "fc") == ["fa", "ga", "ia", "oa"], blocks
assert all(o["ms"] >= 0 for o in blocks[0]["ops"]) and len(blocks[0]["ops"]) == 30, blocks
rc, out = run("time", "lstm.pbtxt", "--threads", "1", "--iterations", "3")
assert "side" not in out, out
print(f"time on 2 threads: {len(side)} of the cell's ops side by side (the four fc and fc_grad among them; "
      "--json's blocks say the same); none on 1")

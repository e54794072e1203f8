# generate_fold.py — `generate` folds an embedding into the input projection
# of the fused recurrent op that reads it (cmd/generate.c, fold_projection):
# every id's x W^T is computed once into a table, and the op multiplies a
# gathered row by 1. The fold must not change a bit, so for lstm, gru
# (linear_before_reset 1), rnn (relu, float64) and a 2-layer lstm with a
# padding_idx, on 1 and 2 threads, the text sampled with the fold equals the
# text of the same net with one more reader of the embedding's output (which
# keeps the fold off; that op is pruned from the run): 400 bytes at
# temperature 1 and 60 greedy ones. And the folded float64 lstm's greedy
# text equals NumPy's, running the LSTM by the formulas of docs/netdesc.md
# from the checkpoint's values.
import os, subprocess, sys

import numpy as np

PR = os.environ["PR"]
V, E, H, T, B = 40, 12, 24, 16, 4

words = "the a of to and in that it was he for on are with as his they be at one have this".split()
rng = np.random.default_rng(11)
text = " ".join(words[i] for i in rng.integers(0, len(words), 3000)) + "\n"
open("corpus.txt", "w").write(text)
vocab = sorted(set(text))
assert len(vocab) <= V
open("vocab.txt", "w").write("".join((c if c != "\n" else "\\n") + "\n" for c in vocab))


def net(op, dtype="FLOAT32", extra="", layers=1, padding=None, attrs=""):
    cell_state = op == "lstm"
    L = layers
    ins = '"x", "rw", "rr", "rb", "", "h0"' + (', "c0"' if cell_state else "")
    if L > 1:
        ins += ', "", "rwl"' if op == "lstm" else ', "rwl"'  # lstm: P left out, then WL
    outs = '"hs", "h_carry"' + (', "c_carry"' if cell_state else "")
    pad = f' attrs {{ key: "padding_idx" value {{ i: {padding} }} }}' if padding is not None else ""
    states = f'var {{ name: "h_carry" shape: [{L}, {B}, {H}] dtype: {dtype} kind: STATE init {{ type: "constant" value: 0 }} }}\n'
    if cell_state:
        states += states.replace("h_carry", "c_carry")
    mults = 'op { type: "broadcast_mul" inputs: ["h_carry", "keep"] outputs: "h0" }\n'
    if cell_state:
        mults += 'op { type: "broadcast_mul" inputs: ["c_carry", "keep"] outputs: "c0" }\n'
    wl = f'var {{ name: "rwl" dtype: {dtype} kind: PARAM init {{ type: "uniform" min: -0.3 max: 0.3 }} }}\n' if L > 1 else ""
    return f'''name: "fold_{op}"
var {{ name: "ids" shape: [{B}, {T}] dtype: INT64 }}
var {{ name: "next" shape: [{B}, {T}] dtype: INT64 }}
var {{ name: "keep" shape: [{B}, 1] dtype: {dtype} }}
{states}var {{ name: "emb" shape: [{V}, {E}] dtype: {dtype} kind: PARAM init {{ type: "gaussian" std: 1 }} }}
var {{ name: "rw" dtype: {dtype} kind: PARAM init {{ type: "uniform" min: -0.3 max: 0.3 }} }}
var {{ name: "rr" dtype: {dtype} kind: PARAM init {{ type: "uniform" min: -0.3 max: 0.3 }} }}
var {{ name: "rb" dtype: {dtype} kind: PARAM init {{ type: "uniform" min: -0.3 max: 0.3 }} }}
{wl}var {{ name: "ow" shape: [{H}, {V}] dtype: {dtype} kind: PARAM init {{ type: "uniform" min: -0.3 max: 0.3 }} }}
op {{ type: "embedding" inputs: ["ids", "emb"] outputs: "x"{pad} }}
{mults}op {{ type: "{op}" inputs: [{ins}] outputs: [{outs}]
     attrs {{ key: "hidden_size" value {{ i: {H} }} }} attrs {{ key: "num_layers" value {{ i: {L} }} }}{attrs} }}
op {{ type: "mul" inputs: ["hs", "ow"] outputs: "logits" attrs {{ key: "x_num_col_dims" value {{ i: 2 }} }} }}
{extra}op {{ type: "softmax_with_cross_entropy" inputs: ["logits", "next"] outputs: ["sm", "tok_loss"] }}
op {{ type: "mean" inputs: "tok_loss" outputs: "avg_loss" }}
train {{ loss: "avg_loss" batch_size: {B} iterations: 30 seed: 3
        optimizer {{ type: "adam" lr: 0.01 }}
        data {{ var: "ids" type: "text" file: "corpus.txt" vocab: "vocab.txt" target: "next" keep: "keep" }} }}
'''


def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"FAIL: paddle-run {' '.join(args)}: exit {r.returncode}\n{r.stdout.decode()}{r.stderr.decode()}")
    return r.stdout


# the extra reader: x read by one more op keeps the fold off
KEEP = 'op { type: "scale" inputs: "x" outputs: "x_seen" }\n'
cases = [
    ("lstm", dict()),
    ("gru", dict(attrs=' attrs { key: "linear_before_reset" value { i: 1 } }')),
    ("rnn", dict(dtype="FLOAT64", attrs=' attrs { key: "activation" value { s: "relu" } }')),
    ("lstm", dict(layers=2, padding=vocab.index("e"))),
]
for k, (op, kw) in enumerate(cases):
    open(f"n{k}.pbtxt", "w").write(net(op, **kw))
    open(f"k{k}.pbtxt", "w").write(net(op, extra=KEEP, **kw))
    run("train", f"n{k}.pbtxt", "--save", f"ck{k}")
    for threads in ("1", "2"):
        for temp, length in (("1", "400"), ("0", "60")):
            args = ["--params", f"ck{k}", "--prime", "the ", "--length", length, "--temperature", temp, "--seed", "5",
                    "--threads", threads]
            folded, kept = run("generate", f"n{k}.pbtxt", *args), run("generate", f"k{k}.pbtxt", *args)
            assert folded == kept, (op, kw, threads, temp, folded, kept)
            assert len(folded) == 4 + int(length), folded
    print(f"{op} {kw}: the folded and unfolded texts agree")

# the folded float64 lstm against NumPy, greedy
open("n64.pbtxt", "w").write(net("lstm", dtype="FLOAT64"))
run("train", "n64.pbtxt", "--save", "ck64")
step = sorted(os.listdir("ck64"), key=lambda s: (len(s), s))
d = os.path.join("ck64", "latest") if os.path.exists(os.path.join("ck64", "latest")) else os.path.join("ck64", step[-1])
p = {f[:-4]: np.load(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".npy")}
ids_of = {c: i for i, c in enumerate(vocab)}
sig = lambda a: 1 / (1 + np.exp(-a))
W, R, Bb, emb, ow = p["rw"][0], p["rr"][0], p["rb"][0], p["emb"], p["ow"]
h, c = np.zeros(H), np.zeros(H)
prime, out = "the ", []
seq = [ids_of[ch] for ch in prime]
for i in range(4 + 60):
    g = W @ emb[seq[i]] + R @ h + Bb[: 4 * H] + Bb[4 * H :]
    gi, gf, gg, go = sig(g[:H]), sig(g[H : 2 * H]), np.tanh(g[2 * H : 3 * H]), sig(g[3 * H :])
    c = gf * c + gi * gg
    h = go * np.tanh(c)
    if i >= 3 and len(seq) < 4 + 60:
        seq.append(int(np.argmax(h @ ow)))
want = "".join(vocab[i] for i in seq).encode()
got = run("generate", "n64.pbtxt", "--params", "ck64", "--prime", prime, "--length", "60", "--temperature", "0")
assert got == want, (got, want)
print("float64 lstm, folded: the greedy text equals NumPy's")

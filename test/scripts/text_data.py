# text_data.py — the text data binding end to end (docs/training.md, "Text
# data"), with truncated BPTT through the `recurrent` op: a tiny char RNN
# whose final state goes into the STATE variable h_carry, fed back as
# h_carry * keep. Every step is saved; NumPy then recomputes each step's
# h_carry from the previous checkpoint's parameters and h_carry and the
# window the layout says that step reads, so the check covers the windows
# (input ids), the streams (row r continues its stream), keep (0 at a
# stream's, a file's and an epoch's first window) and the carried state.
# Then: resume mid-epoch and at an epoch's end equals a straight run byte
# for byte (h_carry included); --shuffle changes nothing; the vocabulary
# maps bytes to ids and is stored in the checkpoint's manifest; held_out
# evaluates the files' tails; `generate` (same seed, same text; another
# seed, another; temperature 0 is NumPy's greedy run; a prime byte not in
# the vocabulary is exit 2); int64 [N, T] .npy token files bind as data.
import glob, os, re, subprocess
import numpy as np

PR = os.environ["PR"]
B, T, H = 2, 4, 3
A = "".join("aaab" if i % 3 else "abba" for i in range(40))  # 160 bytes
Bt = "ab" * 37                                                  # 74 bytes
open("a.txt", "w").write(A)
open("b.txt", "w").write(Bt)
open("v.txt", "w").write("b\na\n")  # id 0 is 'b', id 1 is 'a'

NET = """
name: "charnet"
var { name: "ids" shape: [%(B)d, %(T)d] dtype: INT64 }
var { name: "next" shape: [%(B)d, %(T)d] dtype: INT64 }
var { name: "keep" shape: [%(B)d, 1] }
var { name: "h_carry" shape: [%(B)d, %(H)d] kind: STATE init { type: "constant" value: 0 } }
op { type: "cast" inputs: "ids" outputs: "xf" attrs { key: "dtype" value { s: "float32" } } }
op { type: "scale" inputs: "xf" outputs: "xs" attrs { key: "scale" value { f: 0.01 } } }
op { type: "reshape" inputs: "xs" outputs: "x" attrs { key: "shape" value { ints: [0, -1, 1] } } }
op { type: "broadcast_mul" inputs: ["h_carry", "keep"] outputs: "h0" }
block {
  name: "cell"
  var { name: "h_prev" shape: [-1, %(H)d] }
  var { name: "cell.u" shape: [%(H)d, %(H)d] kind: PARAM }
  op { type: "fc" inputs: ["x_t", "cell.w", "cell.b"] outputs: "a" attrs { key: "size" value { i: %(H)d } } }
  op { type: "mul" inputs: ["h_prev", "cell.u"] outputs: "c" }
  op { type: "elementwise_add" inputs: ["a", "c"] outputs: "s" }
  op { type: "tanh" inputs: "s" outputs: "h" }
}
op { type: "recurrent" inputs: ["x", "h0"] outputs: ["hs", "h_carry"]
     attrs { key: "step_block" value { block: "cell" } }
     attrs { key: "inputs" value { strings: "x_t" } }
     attrs { key: "prev_states" value { strings: "h_prev" } }
     attrs { key: "states" value { strings: "h" } }
     attrs { key: "outputs" value { strings: "h" } } }
op { type: "reshape" inputs: "hs" outputs: "hflat" attrs { key: "shape" value { ints: [-1, %(H)d] } } }
op { type: "fc" inputs: ["hflat", "out.w", "out.b"] outputs: "logits" attrs { key: "size" value { i: 256 } } }
op { type: "reshape" inputs: "next" outputs: "label" attrs { key: "shape" value { ints: [-1, 1] } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "label"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: %(B)d log_every: 1000
        optimizer { type: "sgd" lr: 0.5 }
        data { type: "text" var: "ids" target: "next" keep: "keep" file: "a.txt" more_files: "b.txt" %(extra)s } }
"""


def write_net(extra=""):
    open("net.pbtxt", "w").write(NET % dict(B=B, T=T, H=H, extra=extra))


def run(*args, ok=True):
    r = subprocess.run([PR, "train", "net.pbtxt", "--threads", "1", *args], capture_output=True, text=True, timeout=120)
    if ok:
        assert r.returncode == 0, r.stdout + r.stderr
    return r.returncode, r.stdout + r.stderr


def layout(texts, held_out=0.0, eval_part=False, vocab=None):
    """The windows as docs/training.md describes them: [(ids, targets, keep)] by row."""
    wins = []  # (ids of the file, start, window number in the file)
    for t in texts:
        ids = [vocab.index(c) for c in t] if vocab else [ord(c) for c in t]
        tail = int(len(t) * held_out)
        part = ids[len(t) - tail:] if eval_part else ids[:len(t) - tail]
        n = (len(part) - 1) // T if len(part) >= T + 1 else 0
        wins += [(part, w * T, w) for w in range(n)]
    S = len(wins) // B
    rows = []
    for k in range(S):
        for r in range(B):
            part, s, w = wins[r * S + k]
            rows.append((part[s:s + T], part[s + 1:s + T + 1], 0.0 if k == 0 or w == 0 else 1.0))
    return S, rows


def load(ck):
    return {os.path.basename(f)[:-4]: np.load(f) for f in glob.glob(ck + "/*.npy")}


def step_dirs(d):
    return {int(re.search(r"step-(\d+)", p).group(1)): p for p in glob.glob(d + "/step-*")}


# ---- every step saved; NumPy recomputes h_carry from the previous step
write_net()
S, rows = layout([A, Bt])
assert S == (39 + 18) // 2 == 28, S
steps = S + 5  # into the second epoch
run("--iterations", "0", "--save", "all")
run("--resume", "all", "--save", "all", "--iterations", str(steps), "--save-every", "1", "--keep", "1000")
ck = step_dirs("all")
assert sorted(ck) == list(range(steps + 1)), sorted(ck)
zeroed = carried = 0
for k in range(1, steps + 1):
    p, q = load(ck[k - 1]), load(ck[k])
    bi = (k - 1) % S
    batch = rows[bi * B:(bi + 1) * B]
    keep = np.array([[r[2]] for r in batch])
    h = p["h_carry"].astype(np.float64) * keep
    for t in range(T):
        x = np.array([[float(r[0][t])] for r in batch]) * np.float32(0.01)
        h = np.tanh(x @ p["cell.w"] + p["cell.b"] + h @ p["cell.u"])
    assert np.allclose(h, q["h_carry"], rtol=1e-5, atol=1e-6), (k, h, q["h_carry"])
    zeroed += int((keep == 0).sum())
    carried += int(((keep == 1) & (np.abs(p["h_carry"]).sum(1, keepdims=True) > 0)).sum())
# stream starts (2 at each epoch's first batch) and b.txt's first window
assert zeroed == 2 + 2 + 1, zeroed
assert carried > 40, carried
assert len({load(ck[k])["h_carry"].tobytes() for k in ck}) == steps + 1

# ---- resume mid-epoch and across the epoch's end: the same bytes
run("--save", "straight", "--iterations", str(steps))
run("--save", "half", "--iterations", "7")
run("--resume", "half", "--save", "half", "--iterations", str(S))
run("--resume", "half", "--save", "half", "--iterations", str(steps))
for d in ("all", "half"):
    a = {os.path.basename(f): open(f, "rb").read() for f in glob.glob("straight/latest/*.npy")}
    b = {os.path.basename(f): open(f, "rb").read() for f in glob.glob(d + "/latest/*.npy")}
    assert a == b and "h_carry.npy" in a, d

# ---- the windows are never shuffled: --shuffle gives the same run
run("--save", "shuffled", "--iterations", str(steps), "--shuffle")
a = {os.path.basename(f): open(f, "rb").read() for f in glob.glob("straight/latest/*.npy")}
b = {os.path.basename(f): open(f, "rb").read() for f in glob.glob("shuffled/latest/*.npy")}
assert a == b

# ---- vocabulary: ids are its line numbers, and the manifest keeps it
write_net('vocab: "v.txt"')
S, rows = layout([A, Bt], vocab="ba")
run("--iterations", "0", "--save", "v0")
run("--resume", "v0", "--save", "v0", "--iterations", "1")
manifest = open("v0/latest/manifest.pbtxt").read()
assert 'vocab: "ba"' in manifest, manifest
p, q = load(step_dirs("v0")[0]), load(step_dirs("v0")[1])
h = np.zeros((B, H))
for t in range(T):
    x = np.array([[float(r[0][t])] for r in rows[:B]]) * np.float32(0.01)
    h = np.tanh(x @ p["cell.w"] + p["cell.b"] + h @ p["cell.u"])
assert np.allclose(h, q["h_carry"], rtol=1e-5, atol=1e-6)
assert {r[0][0] for r in rows} <= {0, 1}

# ---- held_out: training on the heads, evaluation on the tails
write_net("held_out: 0.25")
S, rows = layout([A, Bt], held_out=0.25)
Se, erows = layout([A, Bt], held_out=0.25, eval_part=True)
assert (S, Se) == (21, 6), (S, Se)
rc, out = run("--epochs", "1", "--log", "log.jsonl")
assert "finished: %d steps" % S in out and "eval_avg_loss" in out, out

# ---- generate: one byte at a time, the state carried, sampled from the logits
def generate(*args):
    r = subprocess.run([PR, "generate", "net.pbtxt", "--threads", "1", *args], capture_output=True, timeout=60)
    return r.returncode, r.stdout, r.stderr.decode()


write_net()
rc, one, e = generate("--params", "straight", "--prime", "ab", "--length", "60", "--seed", "1")
assert rc == 0 and one.startswith(b"ab") and len(one) == 62, (rc, one, e)
assert generate("--params", "straight", "--prime", "ab", "--length", "60", "--seed", "1")[1] == one
assert generate("--params", "straight", "--prime", "ab", "--length", "60", "--seed", "2")[1] != one
# temperature 0 is the argmax at every step: NumPy runs the net greedily
p = load("straight/latest")
h, text = np.zeros((1, H)), list(b"ab")
for i in range(62):
    x = np.array([[text[i] * np.float32(0.01)]])
    h = np.tanh(x @ p["cell.w"] + p["cell.b"] + h @ p["cell.u"])
    if i >= 1 and len(text) < 62:
        text.append(int(np.argmax(h @ p["out.w"] + p["out.b"])))
rc, greedy, e = generate("--params", "straight", "--prime", "ab", "--length", "60", "--temperature", "0")
assert rc == 0 and greedy == bytes(text), (greedy, bytes(text), e)
assert generate("--params", "straight", "--prime", "ab", "--length", "60", "--temperature", "1e-9", "--seed", "7")[1] == greedy
rc, k1, e = generate("--params", "straight", "--prime", "ab", "--length", "60", "--top-k", "1", "--seed", "3")
assert rc == 0 and k1 == greedy, (k1, greedy)
# the vocabulary comes from the checkpoint: ids 0, 1 are 'b', 'a'; 'c' is not in it
write_net('vocab: "v.txt"')
rc, out, e = generate("--params", "v0", "--prime", "ba", "--length", "30")
assert rc == 0 and set(out) <= set(b"ab"), (out, e)
rc, out, e = generate("--params", "v0", "--prime", "abc", "--length", "30")
assert rc == 2 and "--prime: byte 'c' at offset 2 is not in the checkpoint's vocabulary" in e, (rc, e)

# ---- token sequences from .npy: int64 [N, T] ids and [N] lengths bind as data
rng = np.random.default_rng(3)
np.save("tok.npy", rng.integers(0, 5, size=(10, 6)).astype(np.int64))
np.save("len.npy", rng.integers(1, 7, size=10).astype(np.int64))
open("tok.pbtxt", "w").write("""
var { name: "tok" shape: [-1, 6] dtype: INT64 }
var { name: "len" shape: [-1] dtype: INT64 }
op { type: "cast" inputs: "tok" outputs: "tf" attrs { key: "dtype" value { s: "float32" } } }
op { type: "cast" inputs: "len" outputs: "lf" attrs { key: "dtype" value { s: "float32" } } }
""")
r = subprocess.run([PR, "infer", "tok.pbtxt", "--data", "tok=tok.npy", "--data", "len=len.npy",
                    "--fetch", "tf=tf.npy", "--fetch", "lf=lf.npy"], capture_output=True, text=True)
assert r.returncode == 0, r.stdout + r.stderr
assert np.array_equal(np.load("tf.npy"), np.load("tok.npy").astype(np.float32))
assert np.array_equal(np.load("lf.npy"), np.load("len.npy").astype(np.float32))
print("ok")

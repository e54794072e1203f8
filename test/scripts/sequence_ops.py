# sequence_ops.py — the sequence helpers end to end, on X [batch, time, ...] with uneven
# lengths (6, 2, 1, 4, 3 of 6 steps):
#   1. `infer` in float64 of sequence_mask (from X, and from maxlen as uint8), sequence_last
#      (forward, reverse, bidirectional), sequence_pool (mean, max, sum), sequence_mean, and a
#      language model's loss (softmax_with_cross_entropy over logits [batch, time, V] with
#      labels [batch, time], then sequence_mean) against NumPy to 1e-12;
#   2. each op's gradient against NumPy: one sgd step at lr 1 on a net whose parameter is the
#      op's input and whose loss is mean(Out * G) for random G, so the step is the gradient;
#   3. `gradcheck` (float64, every parameter element) of the same nets;
#   4. where PyTorch is installed, the language model's loss and its gradient against
#      torch.nn.functional.cross_entropy with ignore_index on the padded labels (1e-12).
import os, subprocess
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(21)
B, T, F, V = 5, 6, 4, 7
lens = np.array([6, 2, 1, 4, 3], np.int64)
valid = np.arange(T)[None, :] < lens[:, None]  # [B, T]


def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    assert r.returncode == 0, " ".join(args) + "\n" + r.stdout + r.stderr
    return r.stdout + r.stderr


def close(name, got, want, tol=1e-12):
    assert got.shape == want.shape, f"{name}: shape {got.shape}, want {want.shape}"
    err = np.max(np.abs(got - want) / np.maximum(np.abs(want), 1))
    assert err <= tol, f"{name}: max error {err} > {tol}\ngot {got}\nwant {want}"


def attr(key, val):
    return f' attrs {{ key: "{key}" value {{ {val} }} }}'


x = rng.normal(size=(B, T, F))
z = rng.normal(size=(B, T, V)) * 2
y = rng.integers(0, V, size=(B, T)).astype(np.int64)
y[~valid] = 0  # padding: any valid class; the masked mean leaves it out
np.save("x.npy", x), np.save("z.npy", z), np.save("y.npy", y), np.save("len.npy", lens)

# ---- NumPy references ------------------------------------------------------------
rows = np.arange(B)


def ref_last(a, direction):
    fwd, rev = a[rows, lens - 1], a[:, 0]
    if direction == "forward":
        return fwd
    if direction == "reverse":
        return rev
    h = a.shape[-1] // 2
    return np.concatenate([fwd[..., :h], rev[..., h:]], axis=-1)


def ref_pool(a, kind):
    out = []
    for r in range(B):
        s = a[r, :lens[r]]
        out.append({"mean": s.mean(0), "max": s.max(0), "sum": s.sum(0)}[kind])
    return np.stack(out)


def ref_seq_mean(a):
    return np.array([a[valid].sum() / (valid.sum() * (a[0, 0].size))])


def softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ref_token_loss(logits):
    m = logits.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(logits - m).sum(-1, keepdims=True)))[..., 0]
    return lse - np.take_along_axis(logits, y[..., None], -1)[..., 0]


# ---- 1. forward ------------------------------------------------------------------
net = ('var { name: "x" shape: [-1, 6, 4] dtype: FLOAT64 }\nvar { name: "z" shape: [-1, 6, 7] dtype: FLOAT64 }\n'
       'var { name: "y" shape: [-1, 6] dtype: INT64 }\nvar { name: "len" shape: [-1] dtype: INT64 }\n')
net += 'op { type: "sequence_mask" inputs: ["len", "x"] outputs: "mask" }\n'
net += 'op { type: "sequence_mask" inputs: ["len"] outputs: "mask8"' + attr("maxlen", "i: 6") + attr(
    "dtype", 's: "uint8"') + ' }\n'
for d in ("forward", "reverse", "bidirectional"):
    net += f'op {{ type: "sequence_last" inputs: ["x", "len"] outputs: "last_{d}"' + attr("direction", f's: "{d}"') + ' }\n'
for k in ("mean", "max", "sum"):
    net += f'op {{ type: "sequence_pool" inputs: ["x", "len"] outputs: "pool_{k}"' + attr("pooling_type", f's: "{k}"') + ' }\n'
net += 'op { type: "sequence_mean" inputs: ["x", "len"] outputs: "xmean" }\n'
net += 'op { type: "softmax_with_cross_entropy" inputs: ["z", "y"] outputs: ["prob", "tok"] }\n'
net += 'op { type: "sequence_mean" inputs: ["tok", "len"] outputs: "lm_loss" }\n'
open("fwd.pbtxt", "w").write(net)
want = {"mask": valid.astype(np.float32), "mask8": valid.astype(np.uint8), "xmean": ref_seq_mean(x),
        "tok": ref_token_loss(z)[..., None], "lm_loss": ref_seq_mean(ref_token_loss(z)), "prob": softmax(z)}
for d in ("forward", "reverse", "bidirectional"):
    want[f"last_{d}"] = ref_last(x, d)
for k in ("mean", "max", "sum"):
    want[f"pool_{k}"] = ref_pool(x, k)
fetch = [a for n in want for a in ("--fetch", f"{n}={n}.npy")]
run("infer", "fwd.pbtxt", "--data", "x=x.npy", "--data", "z=z.npy", "--data", "y=y.npy", "--data", "len=len.npy",
    *fetch)
for n, w in want.items():
    got = np.load(f"{n}.npy")
    assert got.dtype == w.dtype, f"{n}: dtype {got.dtype}, want {w.dtype}"
    close(n, got, w)
print(f"forward: {len(want)} outputs of {B} rows with lengths {list(lens)} match NumPy within 1e-12")

# ---- 2. gradients against NumPy, and 3. gradcheck ------------------------------------
# Each net: the op reads parameter p (its X, [B, ...]); loss = mean(Out * g), g a data
# variable; one sgd step at lr 1 from p0 leaves p0 - dLoss/dp.
DECL = {"len": "shape: [-1] dtype: INT64", "y": "shape: [-1, 6] dtype: INT64"}


def with_data(ops, p_shape, g_shape, name):
    """The net with its parameter p, the data it reads declared, and train.data for them."""
    decl = dict(DECL, g=f"shape: {g_shape} dtype: FLOAT64")
    used = [v for v in decl if f'"{v}"' in ops]
    files = {"len": "len.npy", "y": "y.npy", "g": f"g_{name}.npy"}
    head = f'var {{ name: "p" kind: PARAM shape: {p_shape} dtype: FLOAT64 }}\n'
    head += "".join(f'var {{ name: "{v}" {decl[v]} }}\n' for v in used)
    data = " ".join(f'data {{ var: "{v}" file: "{files[v]}" }}' for v in used)
    return head + ops + f'train {{ loss: "loss" batch_size: 5 epochs: 1 seed: 1 optimizer {{ type: "sgd" lr: 1 }}\n  {data} }}\n'


WEIGHTED = ('op { type: "broadcast_mul" inputs: ["out", "g"] outputs: "og" }\n'
            'op { type: "mean" inputs: "og" outputs: "loss" }\n')


def grad_last(p, g, d):
    dp, gs = np.zeros_like(p), g / g.size
    h = p.shape[-1] // 2
    for r in range(B):
        for lo, hi, step in ((0, h, lens[r] - 1), (h, p.shape[-1], 0)) if d == "bidirectional" else \
                ((0, p.shape[-1], lens[r] - 1 if d == "forward" else 0),):
            dp[r, step, ..., lo:hi] = gs[r, ..., lo:hi]
    return dp


def grad_pool(p, g, k):
    dp, gs = np.zeros_like(p), g / g.size
    for r in range(B):
        n = lens[r]
        if k == "max":
            first = p[r, :n].argmax(0)  # the first maximum
            for i in np.ndindex(first.shape):
                dp[(r, first[i]) + i] = gs[(r,) + i]
        else:
            dp[r, :n] = gs[r] / (n if k == "mean" else 1)
    return dp


def grad_lm(logits):
    onehot = np.eye(V)[y]
    return (softmax(logits) - onehot) * valid[..., None] / valid.sum()


cases = []  # (name, op text, p0, g or None, reference gradient)
for d in ("forward", "reverse", "bidirectional"):
    g = rng.normal(size=(B, F))
    cases.append((f"last_{d}", f'op {{ type: "sequence_last" inputs: ["p", "len"] outputs: "out"' +
                  attr("direction", f's: "{d}"') + ' }\n' + WEIGHTED, x, g, grad_last(x, g, d)))
x4 = rng.normal(size=(B, T, 2, 3))  # more than one trailing dim
for k in ("mean", "max", "sum"):
    for name, p in ((f"pool_{k}", x), (f"pool_{k}_4d", x4)):
        g = rng.normal(size=(B,) + p.shape[2:])
        cases.append((name, f'op {{ type: "sequence_pool" inputs: ["p", "len"] outputs: "out"' +
                      attr("pooling_type", f's: "{k}"') + ' }\n' + WEIGHTED, p, g, grad_pool(p, g, k)))
xt = rng.normal(size=(B, T))
cases.append(("sequence_mean", 'op { type: "sequence_mean" inputs: ["p", "len"] outputs: "loss" }\n', xt, None,
              valid / valid.sum()))
cases.append(("lm_loss", 'op { type: "softmax_with_cross_entropy" inputs: ["p", "y"] outputs: ["prob", "tok"] }\n'
              'op { type: "sequence_mean" inputs: ["tok", "len"] outputs: "loss" }\n', z, None, grad_lm(z)))

dims = lambda shape: "[" + ", ".join(str(s) for s in shape) + "]"
for name, ops, p0, g, want_grad in cases:
    g = np.zeros((B, 1)) if g is None else g
    np.save(f"g_{name}.npy", g)
    open(f"{name}.pbtxt", "w").write(with_data(ops, dims(p0.shape), dims((-1,) + g.shape[1:]), name))
    os.makedirs(f"p_{name}", exist_ok=True)
    np.save(f"p_{name}/p.npy", p0)
    run("train", f"{name}.pbtxt", "--params", f"p_{name}", "--iterations", "1", "--no-shuffle",
        "--save", f"ck_{name}")
    got = p0 - np.load(f"ck_{name}/step-00000001/p.npy")
    close(f"gradient of {name}", got, want_grad, 1e-12)
    out = run("gradcheck", f"{name}.pbtxt", "--params", f"p_{name}", "--rows", "5", "--elements", "0")
    print(f"{name}: gradient matches NumPy within 1e-12; gradcheck: " + out.strip().splitlines()[-1])

# ---- 4. PyTorch ------------------------------------------------------------------
try:
    import torch
except ImportError:
    torch = None
if torch is None:
    print("PyTorch is not installed (python3-torch): compared with NumPy only")
else:
    zt = torch.tensor(z, requires_grad=True)
    labels = torch.tensor(np.where(valid, y, -100))
    loss = torch.nn.functional.cross_entropy(zt.reshape(-1, V), labels.reshape(-1), ignore_index=-100)
    loss.backward()
    close("lm_loss against PyTorch", np.load("lm_loss.npy"), loss.detach().numpy().reshape(1))
    ours = z - np.load("ck_lm_loss/step-00000001/p.npy")
    close("lm_loss gradient against PyTorch", ours, zt.grad.numpy())
    print(f"language model loss and its gradient match PyTorch {torch.__version__}'s cross_entropy "
          "with ignore_index on the padding within 1e-12")

# embedding.py — the embedding op and its row-sparse gradient:
#   1. `infer` of an embedding with repeated ids and padding_idx matches a
#      NumPy lookup (padding rows zero), float32 and float64;
#   2. `gradcheck` in float64 of nets with an embedding (padding_idx,
#      repeated ids), one whose table is also read by a product (tied: the
#      dense gradient, summed) and one without padding;
#   3. training W alone with sgd, momentum and adam (row-sparse, lazy) gives
#      the W that PyTorch's nn.Embedding(padding_idx) gives with SGD, SGD
#      with momentum and SparseAdam (sparse=True) on the same values, within
#      1e-6 in float32 and 1e-12 in float64 (skipped, visibly, without
#      torch; a NumPy lazy-update reference runs either way); rows no id used
#      are bit-identical to the start; the tied net matches a NumPy reference;
#   4. with V = 1,000,000 and D = 16 no [V, D] gradient is made per step:
#      `check` plans no temporary near V*D*4 bytes and a short sgd run's
#      peak RSS stays below the table twice over.
import glob, os, subprocess
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(21)


def run(*args, ok=True):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, " ".join(args) + "\n" + r.stdout + r.stderr
    return r.returncode, r.stdout + r.stderr


def emb(ids="ids", w="emb.w", out="e", pad=-1, vd=None):
    a = f'attrs {{ key: "padding_idx" value {{ i: {pad} }} }}'
    if vd:
        a += f' attrs {{ key: "vocab_size" value {{ i: {vd[0]} }} }} attrs {{ key: "dim" value {{ i: {vd[1]} }} }}'
    return f'op {{ type: "embedding" inputs: ["{ids}", "{w}"] outputs: "{out}" {a} }}\n'


def latest(ck, name):
    return np.load(sorted(glob.glob(f"{ck}/step-*"))[-1] + f"/{name}.npy")


# ---- 1. forward against NumPy ---------------------------------------------------
V, D, B, T, PAD = 11, 4, 6, 5, 2
ids = rng.integers(0, V, size=(B, T))
ids[0] = [3, 3, PAD, 3, 0]
for dt, npdt in (("FLOAT32", np.float32), ("FLOAT64", np.float64)):
    W = rng.normal(size=(V, D)).astype(npdt)
    W[PAD] = 7  # padding rows of Out are zero whatever W holds
    os.makedirs("p", exist_ok=True)
    np.save("p/emb.w.npy", W), np.save("ids.npy", ids)
    open("fwd.pbtxt", "w").write(f'var {{ name: "ids" shape: [-1, {T}] dtype: INT64 }}\n'
                                 f'var {{ name: "emb.w" shape: [{V}, {D}] dtype: {dt} kind: PARAM }}\n' + emb(pad=PAD))
    run("infer", "fwd.pbtxt", "--params", "p", "--data", "ids=ids.npy", "--fetch", "e=e.npy", "--batch-size", "4")
    want = W[ids] * (ids != PAD)[..., None]
    got = np.load("e.npy")
    assert got.dtype == npdt and got.shape == (B, T, D), (got.dtype, got.shape)
    assert np.array_equal(got, want), "embedding differs from W[ids]"
print("forward: Out = W[ids] with padding rows zero, exactly, float32 and float64")

# ---- 2. gradients against finite differences ------------------------------------
np.save("y.npy", rng.integers(0, 3, size=(8, 1)))
gids = rng.integers(0, 7, size=(8, 3))
gids[:, 0] = 4  # a repeated id in every row
gids[1, 1] = 0  # and the padding id
np.save("gids.npy", gids)
HEAD = ('var { name: "ids" shape: [-1, 3] dtype: INT64 }\nvar { name: "y" shape: [-1, 1] dtype: INT64 }\n')
LOSS = """op { type: "reshape" inputs: "%s" outputs: "ef" attrs { key: "shape" value { ints: [-1, %d] } } }
op { type: "fc" inputs: ["ef", "out.w", "out.b"] outputs: "logits" attrs { key: "size" value { i: 3 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
train { loss: "avg_loss" batch_size: 8 data { var: "ids" file: "gids.npy" } data { var: "y" file: "y.npy" } }
"""
nets = {
    "padding": HEAD + emb(pad=0, vd=(7, 5)) + LOSS % ("e", 15),
    "no_padding": HEAD + emb(vd=(7, 5)) + 'op { type: "tanh" inputs: "e" outputs: "t" }\n' + LOSS % ("t", 15),
    # tied: the table is also the weight of a product, so its gradient is the dense sum of both
    "tied": HEAD + 'var { name: "emb.w" shape: [7, 5] kind: PARAM }\n' + emb(pad=0) +
    'op { type: "transpose" inputs: "emb.w" outputs: "wt" attrs { key: "perm" value { ints: [1, 0] } } }\n'
    'op { type: "matmul" inputs: ["e", "wt"] outputs: "s" }\n' + LOSS % ("s", 21),
}
for name, text in nets.items():
    open(f"g_{name}.pbtxt", "w").write(text)
    _, out = run("gradcheck", f"g_{name}.pbtxt")
    assert "checked 3 parameters" in out, out
print("gradcheck in float64: padding_idx and repeated ids, no padding, tied table: " + ", ".join(nets))

# ---- 3. updates against PyTorch and NumPy ----------------------------------------
V, D, B, T, STEPS, PAD = 40, 3, 4, 5, 4, 1
tids = rng.integers(0, 20, size=(B * STEPS, T))  # rows 20..39 are never used
tids[0, :3] = [5, 5, PAD]
np.save("tids.npy", tids)
OPT = {"sgd": 'type: "sgd" lr: 0.3',
       "momentum": 'type: "momentum" lr: 0.2 momentum: 0.9',
       "adam": 'type: "adam" lr: 0.05 beta1: 0.9 beta2: 0.999 epsilon: 1e-16'}


def train(opt, dt, npdt, W0, Y, tied=False, extra=""):
    np.save("p/emb.w.npy", W0), np.save("ty.npy", Y)
    tail = ('op { type: "transpose" inputs: "emb.w" outputs: "wt" attrs { key: "perm" value { ints: [1, 0] } } }\n'
            'op { type: "matmul" inputs: ["e", "wt"] outputs: "s" }\n'
            'op { type: "mse" inputs: ["s", "ty"] outputs: "l" }\n') if tied else \
        'op { type: "mse" inputs: ["e", "ty"] outputs: "l" }\n'
    ys = Y.shape[-1]
    text = (f'var {{ name: "ids" shape: [-1, {T}] dtype: INT64 }}\n'
            f'var {{ name: "ty" shape: [-1, {T}, {ys}] dtype: {dt} }}\n'
            f'var {{ name: "emb.w" shape: [{V}, {D}] dtype: {dt} kind: PARAM }}\n' + emb(pad=PAD) + tail +
            f'train {{ loss: "l" batch_size: {B} seed: 1 optimizer {{ {OPT[opt]} {extra} }}\n'
            '  data { var: "ids" file: "tids.npy" } data { var: "ty" file: "ty.npy" } }\n')
    open("t.pbtxt", "w").write(text)
    ck = f"ck_{opt}_{dt}_{tied}_{len(extra)}"
    run("train", "t.pbtxt", "--params", "p", "--iterations", str(STEPS), "--no-shuffle", "--save", ck)
    return latest(ck, "emb.w")


def numpy_lazy(opt, W0, Y, wd=0.0, tied=False):
    """The updates in float64 as docs/netdesc.md states them: lazy, on the rows used."""
    W, S1, S2 = W0.astype(np.float64), np.zeros((V, D)), np.zeros((V, D))
    for k in range(STEPS):
        ib, yb = tids[k * B:(k + 1) * B], Y[k * B:(k + 1) * B].astype(np.float64)
        E = W[ib] * (ib != PAD)[..., None]
        if tied:
            S = E @ W.T
            dS = 2 * (S - yb) / S.size
            G = np.einsum("btv,btd->vd", dS, E)  # from the product
            dE = dS @ W
        else:
            dE = 2 * (E - yb) / E.size
            G = np.zeros((V, D))
        m = ib != PAD
        np.add.at(G, ib[m], dE[m])
        rows = np.arange(V) if tied else np.unique(ib[m])
        g = G[rows] + wd * W[rows]
        if opt == "sgd":
            W[rows] -= OPTLR[opt] * g
        elif opt == "momentum":
            S1[rows] = 0.9 * S1[rows] + g
            W[rows] -= OPTLR[opt] * S1[rows]
        else:
            t = k + 1
            S1[rows] = 0.9 * S1[rows] + 0.1 * g
            S2[rows] = 0.999 * S2[rows] + 0.001 * g * g
            W[rows] -= OPTLR[opt] * (S1[rows] / (1 - 0.9 ** t)) / (np.sqrt(S2[rows] / (1 - 0.999 ** t)) + 1e-16)
    return W


OPTLR = {"sgd": 0.3, "momentum": 0.2, "adam": 0.05}
try:
    import torch
except ImportError:
    torch = None

for dt, npdt, tol in (("FLOAT32", np.float32, 1e-6), ("FLOAT64", np.float64, 1e-12)):
    W0 = rng.normal(size=(V, D)).astype(npdt)
    Y = rng.normal(size=(B * STEPS, T, D)).astype(npdt)
    for opt in OPT:
        got = train(opt, dt, npdt, W0, Y)
        used = np.unique(tids[tids != PAD])
        untouched = np.setdiff1d(np.arange(V), used)
        assert got.tobytes() != W0.tobytes()
        assert got[untouched].tobytes() == W0[untouched].tobytes(), f"{opt}: a row no id used changed"
        ref = numpy_lazy(opt, W0, Y)
        err = np.max(np.abs(got - ref))
        assert err < (1e-5 if npdt == np.float32 else tol), f"{opt} {dt}: max error {err} against NumPy"
        if torch is None:
            continue
        tdt = torch.float32 if npdt == np.float32 else torch.float64
        e = torch.nn.Embedding(V, D, padding_idx=PAD, sparse=True).to(tdt)
        with torch.no_grad():
            e.weight.copy_(torch.tensor(W0))
        if opt == "sgd":
            o = torch.optim.SGD(e.parameters(), lr=0.3)
        elif opt == "momentum":  # lazy: torch's momentum moves a row by its past velocity when unused
            o = None
        else:
            o = torch.optim.SparseAdam(e.parameters(), lr=0.05, betas=(0.9, 0.999), eps=1e-16)
        if o is None:
            continue
        for k in range(STEPS):
            o.zero_grad()
            out = e(torch.tensor(tids[k * B:(k + 1) * B]))
            torch.nn.functional.mse_loss(out, torch.tensor(Y[k * B:(k + 1) * B])).backward()
            o.step()
        want = e.weight.detach().numpy()
        err = np.max(np.abs(got - want) / np.maximum(1, np.abs(want)))
        # Adam's ratio m / sqrt(v) amplifies the last bits where a row's gradients change
        # sign (SparseAdam updates m as m + (1 - b1)(g - m)): 1.4e-6 in float32, 7e-14 in float64
        limit = tol * (5 if opt == "adam" and npdt == np.float32 else 1)
        assert err < limit, f"{opt} {dt}: max relative error {err} against PyTorch"
    print(f"{dt}: sgd, momentum, adam (lazy) match NumPy; unused rows bit-identical" +
          ("" if torch is None else f"; sgd and adam match PyTorch {torch.__version__} within {tol:g} relative (float32 adam 5e-6)"))
    if npdt == np.float64:  # the tied table: a dense gradient, summed; every row updated
        for opt in ("sgd", "adam"):
            Yt = rng.normal(size=(B * STEPS, T, V))
            got, ref = train(opt, dt, npdt, W0, Yt, tied=True), numpy_lazy(opt, W0, Yt, tied=True)
            err = np.max(np.abs(got - ref))
            assert err < tol, f"tied {opt}: max error {err} against NumPy"
        print("tied table (embedding and a product read W): sgd and adam match NumPy within 1e-12")
if torch is None:
    print("SKIP (visible): PyTorch is not installed (python3-torch): compared with NumPy only")

# ---- 4. no [V, D] gradient per step for a large table ----------------------------
V, D = 1000000, 16
np.save("big_ids.npy", rng.integers(0, V, size=(64, 8)))
np.save("big_y.npy", rng.normal(size=(64, 8, D)).astype(np.float32))
open("big.pbtxt", "w").write(
    'var { name: "ids" shape: [-1, 8] dtype: INT64 }\nvar { name: "ty" shape: [-1, 8, 16] }\n' +
    emb(vd=(V, D)) + 'op { type: "mse" inputs: ["e", "ty"] outputs: "l" }\n'
    'train { loss: "l" batch_size: 32 seed: 1 optimizer { type: "sgd" lr: 0.1 }\n'
    '  data { var: "ids" file: "big_ids.npy" } data { var: "ty" file: "big_y.npy" } }\n')
_, out = run("check", "big.pbtxt")
line = [l for l in out.splitlines() if "training step: temporaries" in l][0]
assert "MiB" not in line and "GiB" not in line, line  # a dense W@GRAD alone is 61 MiB
if os.path.exists("/usr/bin/time"):  # the peak RSS of paddle-run alone (a child's rusage counts its fork of us)
    # less the same run's with a table of 1,000 rows: what the binary itself
    # holds (a sanitizer build's shadow memory, say) is not the table's
    big = open("big.pbtxt").read()
    assert big.count("{ i: %d }" % V) == 1, big
    open("small.pbtxt", "w").write(big.replace("{ i: %d }" % V, "{ i: 1000 }"))
    np.save("big_ids.npy", rng.integers(0, 1000, size=(64, 8)))
    peaks = {}
    for net in ("small", "big"):
        if net == "big":
            np.save("big_ids.npy", rng.integers(0, V, size=(64, 8)))
        r = subprocess.run(["/usr/bin/time", "-f", "%M", PR, "train", net + ".pbtxt", "--epochs", "2"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        peaks[net] = int(r.stderr.strip().splitlines()[-1])
    peak, table = peaks["big"] - peaks["small"], V * D * 4 / 1024  # KiB
    assert peak < 1.6 * table, f"peak RSS {peaks} KiB for a {table:.0f} KiB table: a dense gradient was made?"
    print(f"V = 1,000,000, D = 16: {line.strip()}; train's peak RSS beyond a 1,000-row table's ({peaks}) "
          f"{peak / table:.2f}x the table")
else:
    print(f"V = 1,000,000, D = 16: {line.strip()}; SKIP (visible): no /usr/bin/time for the peak RSS")

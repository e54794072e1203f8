#!/usr/bin/env python3
"""compare_torch.py — the training step of a paddle-run net in PyTorch (CPU),
for comparison with `paddle-run train`. Four models; mlp, cnn and cnn3 are fed
mini-batches (shuffled, or in file order with --no-shuffle) from the same
Fashion-MNIST IDX files, uint8 pixels cast and
scaled to [0, 1] inside the step, softmax cross-entropy, and the softmax and
accuracy metric computed each step as the NetDescs do:
  mlp (netdescs/fashion_mlp.pbtxt): 784-512-256-10 with ReLU; SGD momentum
      0.9, lr 0.05 on a cosine schedule over 9380 steps.
  cnn (netdescs/fashion_cnn.pbtxt): conv 5x5 32 filters pad 2 stride 1 with
      bias -> relu -> max pool 2x2 stride 2 -> conv 5x5 64 filters pad 2 with
      bias -> relu -> max pool 2x2 -> flatten -> fc 3136x256 + relu ->
      dropout 0.5 (scaled in training) -> fc 256x10; Adam (0.9, 0.999, 1e-8),
      lr 0.002 on a cosine schedule over 4690 steps (set each step, as
      paddle-run does), or with --optimizer momentum SGD momentum 0.9, lr 0.01
      on the same schedule (bench.py's momentum variant of the net, so that
      the optimizer's cost on one side does not decide the ratio);
      xavier-uniform weights, zero biases (unless --params).
  cnn3 (netdescs/fashion_cnn3.pbtxt): conv 3x3 32, relu, conv 3x3 32, relu,
      max pool 2x2, conv 3x3 64, relu, conv 3x3 64, relu, max pool 2x2 (all
      padding 1 with bias), then as cnn from flatten on, with its optimizers.
  tiny (bench/tiny.pbtxt): 16-16-2 with ReLU on float32 rows from --data
      X.npy LABEL.npy; SGD momentum 0.9, lr 0.01.
With --serve, a request {"cmd": "infer", "threads", "batch", "params", "runs"}
times the MLP's inference instead (see infer()), and {"cmd": "gemm", "threads",
"n"} an n x n x n float32 matmul (shows whether BLIS threads, see gemm()).
A net joins by adding its model to make_model(): bench.py then runs it in
every peer configuration like the others. The recurrent nets:
  fashion_lstm (netdescs/fashion_lstm_fused.pbtxt): rows of 28 pixels into
      an LSTM 128, fc 10 on the last h; Adam lr 0.001.
  char_lm (netdescs/char_lm.pbtxt, request "model": "char_lm"): embedding
      64, LSTM 256, fc 256 over windows of 64 bytes of the fortunes texts,
      the state carried between windows; Adam lr 0.002, clip 5 (run_lm());
      {"cmd": "generate", "threads", "tokens"} times its batch-1 sampling.

The peer is tried in several configurations (bench.py's PEER_CONFIGS): Debian's
PyTorch multiplies matrices with BLIS (OpenMP flavour), which
torch.set_num_threads() does not thread; BLIS_NUM_THREADS / OMP_NUM_THREADS
(and other environment knobs) must be set before torch is imported, so
bench.py starts one --serve process per environment, and the ready line
reports what the process saw. Knobs that can change in a process come with
each request as "knobs" (see KNOBS).
Prints one JSON line: steady-state examples/s over the steps after the
first `--warmup` steps (the same interval paddle-run's log is read over).
With --serve it stays up (torch imported and data read once) and answers
one run per request line, so bench.py can alternate runs with paddle-run's.
With --params DIR (paddle-run's .npy parameter files) and --no-shuffle the run is
the same computation as `paddle-run train NET --params DIR --no-shuffle`: same
initial parameters, same batches in the same order, same optimizer and
learning-rate schedule; the mean loss of each logged interval is returned for
bench.py to check against paddle-run's log.
    compare_torch.py [--model mlp|cnn|cnn3|tiny] [--data X.npy LABEL.npy] --threads N --batch B --iterations K --warmup W
                     [--params DIR] [--no-shuffle] [--dropout P] [--optimizer adam|momentum]
                     [--knob NAME ...]
    compare_torch.py --lm-quality STEPS --params DIR [--threads N]
    compare_torch.py --serve   < JSON lines {"batch", "threads", "iterations", "warmup",
                                 "model", "params", "shuffle", "dropout", "optimizer", "knobs"} """
import argparse
import contextlib
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch

DATA = "/usr/share/datasets/fashion-mnist/"
CNN_LR, CNN_DECAY = 0.002, 4690  # fashion_cnn.pbtxt: adam lr 0.002, schedule cosine, decay_steps 4690
CNN_MOMENTUM_LR = 0.01  # bench.py's momentum variant of fashion_cnn.pbtxt: momentum 0.9, lr 0.01, same schedule

# the environment variables that decide the peer's threading, reported in the ready line
PEER_ENV = ("BLIS_NUM_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "ATEN_CPU_CAPABILITY",
            "OMP_PROC_BIND", "DNNL_MAX_CPU_ISA")
# in-process knobs a request may ask for: channels_last (cnn: model and input in NHWC, oneDNN's own layout),
# no_mkldnn (torch.backends.mkldnn.enabled = False: convolutions without oneDNN), inference_mode (infer:
# torch.inference_mode() in place of torch.no_grad())
KNOBS = ("channels_last", "no_mkldnn", "inference_mode")


@contextlib.contextmanager
def knobs_applied(knobs):
    """The process-wide knobs of `knobs` set for the duration of one run, then put back."""
    bad = [k for k in knobs if k not in KNOBS]
    if bad:
        raise ValueError(f"unknown knob(s) {bad}")
    old = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = "no_mkldnn" not in knobs
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = old


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


MLP_LR, MLP_DECAY = 0.05, 9380  # fashion_mlp.pbtxt: momentum lr 0.05, schedule cosine, decay_steps 9380


def cosine(base, decay):
    """paddle-run's cosine schedule (end_lr 0): the lr of 0-based step `step`."""
    def lr(step):
        f = min(step / decay, 1.0)
        return 0.5 * base * (1 + math.cos(math.pi * f))
    return lr


def load_params(model, names, params):
    """Copies paddle-run's parameter files (NAME.npy in `params`) into the model's Linear/Conv2d layers, in
    order; fc weights are [in, out] in paddle-run and [out, in] in PyTorch, conv filters are alike."""
    layers = [m for m in model.modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))]
    with torch.no_grad():
        for m, name in zip(layers, names):
            w = np.load(f"{params}/{name}.w.npy")
            b = np.load(f"{params}/{name}.b.npy")
            if isinstance(m, torch.nn.Linear):
                w = w.T
            if tuple(w.shape) != tuple(m.weight.shape) or tuple(b.shape) != tuple(m.bias.shape):
                raise ValueError(f"{params}/{name}: shapes {w.shape}, {b.shape} do not fit {tuple(m.weight.shape)}")
            m.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
            m.bias.copy_(torch.from_numpy(b))


def make_model(name, params=None, dropout=0.5):
    """The model, its input shape per example and its lr for each step; with `params`, the parameters come
    from paddle-run's .npy files there."""
    nn = torch.nn
    if name == "mlp":
        model = nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 512), nn.ReLU(),
            nn.Linear(512, 256), nn.ReLU(),
            nn.Linear(256, 10))
        if params:
            load_params(model, ["fc1", "fc2", "fc3"], params)
        return model, (784,), cosine(MLP_LR, MLP_DECAY)
    if name == "tiny":  # bench/tiny.pbtxt: 16-16-2, momentum 0.9, lr 0.01 constant
        model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2))
        if params:
            load_params(model, ["fc1", "fc2"], params)
        return model, (16,), lambda step: 0.01
    if name == "cnn":
        model = nn.Sequential(
            nn.Conv2d(1, 32, 5, stride=1, padding=2), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, 5, stride=1, padding=2), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 256), nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(256, 10))
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    nn.init.xavier_uniform_(m.weight)
                    if m.bias is not None:
                        m.bias.zero_()
        if params:
            load_params(model, ["conv1", "conv2", "fc1", "fc2"], params)
        return model, (1, 28, 28), cosine(CNN_LR, CNN_DECAY)
    if name == "cnn3":  # netdescs/fashion_cnn3.pbtxt: two blocks of two 3x3 convolutions, as cnn after them
        model = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 256), nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(256, 10))
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    nn.init.xavier_uniform_(m.weight)
                    if m.bias is not None:
                        m.bias.zero_()
        if params:
            load_params(model, ["c11", "c12", "c21", "c22", "fc1", "fc2"], params)
        return model, (1, 28, 28), cosine(CNN_LR, CNN_DECAY)
    if name == "fashion_lstm":  # netdescs/fashion_lstm_fused.pbtxt: rows of 28 pixels, LSTM 128, fc on the last h
        model = LstmClassifier()
        if params:
            load_lstm(model.lstm, params, "lstm")
            load_linear(model.fc, params, "out")
        return model, (28, 28), lambda step: LSTM_LR
    raise ValueError(f"unknown model {name!r}")


def load_lstm(lstm, params, name):
    """paddle-run's `lstm` or `gru` parameters NAME.w [1, G, I] (layer 0's input weights), NAME.r [L, G, H],
    NAME.b [L, 2G] (input biases, then recurrent ones) and for L > 1 NAME.wl [L-1, G, H] (the later layers'
    input weights) into a one-direction torch.nn.LSTM or GRU: the gate orders inside paddle-run are PyTorch's
    (i, f, g, o; r, z, n with linear_before_reset 1), so the rows copy as they are."""
    L = lstm.num_layers
    w, r, b = (np.load(f"{params}/{name}.{k}.npy") for k in "wrb")
    wl = np.load(f"{params}/{name}.wl.npy") if L > 1 else None
    g = lstm.weight_ih_l0.shape[0]
    if w.shape != (1,) + tuple(lstm.weight_ih_l0.shape) or r.shape != (L,) + tuple(lstm.weight_hh_l0.shape) \
            or b.shape != (L, 2 * g) or (L > 1 and wl.shape != (L - 1,) + tuple(lstm.weight_ih_l1.shape)):
        raise ValueError(f"{params}/{name}: shapes {w.shape}, {r.shape}, {b.shape} do not fit {lstm}")
    with torch.no_grad():
        for l in range(L):
            getattr(lstm, f"weight_ih_l{l}").copy_(torch.from_numpy(w[0] if l == 0 else wl[l - 1]))
            getattr(lstm, f"weight_hh_l{l}").copy_(torch.from_numpy(r[l]))
            getattr(lstm, f"bias_ih_l{l}").copy_(torch.from_numpy(b[l, :g]))
            getattr(lstm, f"bias_hh_l{l}").copy_(torch.from_numpy(b[l, g:]))


def load_linear(m, params, name):
    """NAME.w [in, out] and NAME.b [out] (an fc's, or a mul's and an elementwise_add's) into a Linear."""
    w, b = np.load(f"{params}/{name}.w.npy"), np.load(f"{params}/{name}.b.npy")
    if w.T.shape != tuple(m.weight.shape) or b.shape != tuple(m.bias.shape):
        raise ValueError(f"{params}/{name}: shapes {w.shape}, {b.shape} do not fit {tuple(m.weight.shape)}")
    with torch.no_grad():
        m.weight.copy_(torch.from_numpy(np.ascontiguousarray(w.T)))
        m.bias.copy_(torch.from_numpy(b))


LSTM_LR = 0.001  # fashion_lstm_fused.pbtxt: adam lr 0.001, constant
LM_LR, LM_CLIP, LM_VOCAB, LM_EMB, LM_HIDDEN = 0.002, 5.0, 256, 64, 256  # netdescs/char_lm.pbtxt


class LstmClassifier(torch.nn.Module):
    """fashion_lstm_fused.pbtxt: an image read row by row (28 steps of 28), LSTM 128, fc 10 on the last h."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(28, 128, batch_first=True)
        self.fc = torch.nn.Linear(128, 10)

    def forward(self, x):
        _, (h, _) = self.lstm(x)
        return self.fc(h[-1])


class CharLM(torch.nn.Module):
    """netdescs/char_lm.pbtxt: embedding 64 per byte, LSTM 256, projection back to the 256 byte values; its
    variants in bench.py (LM_VARIANTS): a GRU in the LSTM's place, or two LSTM layers."""

    def __init__(self, cell="lstm", layers=1):
        super().__init__()
        self.emb = torch.nn.Embedding(LM_VOCAB, LM_EMB)
        rnn = torch.nn.GRU if cell == "gru" else torch.nn.LSTM
        self.lstm = rnn(LM_EMB, LM_HIDDEN, num_layers=layers, batch_first=True)
        self.out = torch.nn.Linear(LM_HIDDEN, LM_VOCAB)

    def forward(self, ids, state):
        y, state = self.lstm(self.emb(ids), state)
        return self.out(y), state


# the char LM's variants the bench also times: request "model" -> (cell, layers, paddle-run's name for the
# recurrent op's parameters)
LM_VARIANTS = {"char_lm": ("lstm", 1, "lstm"), "char_lm_gru": ("gru", 1, "gru"), "char_lm_2layer": ("lstm", 2, "lstm")}

LM_FILES = "/usr/share/games/fortunes/*.u8"  # char_lm.pbtxt's data: the files in name order, held_out 0.05


def lm_text():
    """The bytes char_lm.pbtxt reads (the fortunes files), or random bytes where they are missing: the step's
    time does not depend on the text."""
    import glob
    files = sorted(glob.glob(LM_FILES))
    raw = b"".join(open(f, "rb").read() for f in files) if files else bytes(range(256)) * 4096
    return torch.from_numpy(np.frombuffer(raw, dtype=np.uint8).astype(np.int64))


def lm_windows(batch, window, held_out=0.05, eval_part=False):
    """The windows `paddle-run train` reads for char_lm.pbtxt's text binding (docs/training.md, "Text
    data"): each file's head (its last `held_out` share is for evaluation) cut into windows of `window` + 1
    bytes overlapping by one, the windows of all files in order dealt into `batch` streams of S consecutive
    windows each (row r reads windows r*S .. r*S+S-1); keep is 0 at a stream's first window and at a file's
    first. With eval_part, the files' tails, as the evaluation after an epoch reads them. Returns ids
    [S, batch, window + 1] and keep [S, batch]."""
    import glob
    wins = []
    for f in sorted(glob.glob(LM_FILES)):
        raw = np.frombuffer(open(f, "rb").read(), dtype=np.uint8).astype(np.int64)
        cut = len(raw) - int(len(raw) * held_out)
        head = raw[cut:] if eval_part else raw[:cut]
        n = (len(head) - 1) // window if len(head) >= window + 1 else 0
        wins += [(head[w * window:w * window + window + 1], w) for w in range(n)]
    S = len(wins) // batch
    ids = np.stack([np.stack([wins[r * S + k][0] for r in range(batch)]) for k in range(S)])
    keep = np.array([[0.0 if k == 0 or wins[r * S + k][1] == 0 else 1.0 for r in range(batch)] for k in range(S)])
    return torch.from_numpy(ids), torch.from_numpy(keep).float()


def run_lm(threads, batch, iterations, warmup, window=64, knobs=(), params=None, model=None, variant="char_lm"):
    """char_lm.pbtxt's training step: windows of `window` bytes, a stream per batch row with the LSTM's state
    carried (detached) from one window to the next, Adam, gradients clipped to global norm 5. Steady-state
    windows/s (examples_per_sec) and tokens/s over the steps after `warmup`. With `params` (paddle-run's
    parameter files) the run is `paddle-run train char_lm.pbtxt --params DIR`'s computation: the same initial
    values, the same windows in the same order (lm_windows), the state zeroed where keep is 0; the mean loss of
    each interval of `warmup` steps is returned, as for run()."""
    with knobs_applied(knobs):
        torch.set_num_threads(threads)
        torch.manual_seed(1)
        cell, layers, pname = LM_VARIANTS[variant]
        model = model or CharLM(cell, layers)
        if params:
            with torch.no_grad():
                model.emb.weight.copy_(torch.from_numpy(np.load(f"{params}/emb.w.npy")))
            load_lstm(model.lstm, params, pname)
            load_linear(model.out, params, "out")
            wins, keeps = lm_windows(batch, window)
        else:
            text = lm_text()
            stride = (text.shape[0] - 1) // batch
            starts = torch.arange(batch) * stride
        model.train()
        opt = torch.optim.Adam(model.parameters(), lr=LM_LR)
        state = None
        t_start, pos = None, 0
        losses, loss_sum = [], 0.0
        for step in range(iterations):
            if step == warmup:
                t_start = time.perf_counter()
            if params:
                k = step % wins.shape[0]
                seq = wins[k]
                if state is None:
                    state = tuple(torch.zeros(layers, batch, LM_HIDDEN) for _ in range(2 if cell == "lstm" else 1))
                state = tuple(s * keeps[k][None, :, None] for s in state)
            else:
                if pos + window + 1 > stride:
                    pos, state = 0, None
                seq = text[starts[:, None] + pos + torch.arange(window + 1)[None, :]]
                pos += window
            if cell == "gru" and state is not None:
                state = state[0]  # nn.GRU's state is the h tensor alone
            logits, state = model(seq[:, :-1], state)
            state = tuple(s.detach() for s in state) if cell == "lstm" else (state.detach(),)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, LM_VOCAB), seq[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), LM_CLIP)
            opt.step()
            last = loss.item()
            loss_sum += last
            if (step + 1) % warmup == 0 or step + 1 == iterations:
                losses.append({"step": step + 1, "loss": loss_sum / ((step % warmup) + 1)})
                loss_sum = 0.0
        elapsed = time.perf_counter() - t_start if t_start else float("nan")
        steps = iterations - warmup
        return {"examples_per_sec": steps * batch / elapsed, "tokens_per_sec": steps * batch * window / elapsed,
                "seconds": elapsed, "steps": steps, "loss": last, "losses": losses, "model": variant,
                "torch": torch.__version__, "threads": torch.get_num_threads()}


def eval_lm(model, batch, window=64):
    """The mean loss per byte over the held-out tails (lm_windows' eval_part), state carried along each
    stream and zeroed where keep is 0: char_lm.pbtxt's eval_avg_loss."""
    wins, keeps = lm_windows(batch, window, eval_part=True)
    model.eval()
    total = 0.0
    with torch.no_grad():
        state = tuple(torch.zeros(1, batch, LM_HIDDEN) for _ in range(2))
        for k in range(wins.shape[0]):
            state = tuple(s * keeps[k][None, :, None] for s in state)
            logits, state = model(wins[k][:, :-1], state)
            total += torch.nn.functional.cross_entropy(logits.reshape(-1, LM_VOCAB),
                                                       wins[k][:, 1:].reshape(-1)).item()
    model.train()
    return total / wins.shape[0]


def lm_quality(threads, steps, params, batch=32):
    """char_lm.pbtxt's whole training (`steps` steps from paddle-run's initial parameter files, the same
    windows) in PyTorch, then its validation loss on the same held-out tails: the quality PyTorch reaches
    with exactly our computation, for docs/training.md."""
    model = CharLM()
    t0 = time.perf_counter()
    r = run_lm(threads, batch, steps, min(100, steps), params=params, model=model)
    return {"steps": steps, "train_loss_last_100": r["losses"][-1]["loss"], "eval_avg_loss": eval_lm(model, batch),
            "seconds": time.perf_counter() - t0, "torch": torch.__version__}


def generate(threads, tokens, knobs=()):
    """Seconds per sampled byte of char_lm's model at batch 1 as `paddle-run generate` runs it: the last
    byte in, one LSTM step carrying the states, the projection, softmax, one sample; under no_grad (or
    inference_mode with that knob)."""
    with knobs_applied(knobs):
        torch.set_num_threads(threads)
        no_grad = torch.inference_mode if "inference_mode" in knobs else torch.no_grad
        model = CharLM()
        model.eval()
        gen = torch.Generator().manual_seed(1)
        with no_grad():
            tok, state = torch.tensor([[84]]), None
            for i in range(20 + tokens):
                if i == 20:
                    t0 = time.perf_counter()
                logits, state = model(tok, state)
                prob = torch.softmax(logits[0, -1] / 0.8, dim=0)
                tok = torch.multinomial(prob, 1, generator=gen).reshape(1, 1)
            return {"seconds_per_token": (time.perf_counter() - t0) / tokens}


def run(pixels, labels, threads, batch, iterations, warmup, model_name="mlp", params=None, shuffle=True,
        dropout=0.5, optimizer="adam", knobs=()):
    """One training run; steady-state examples/s over the steps after `warmup`, and the mean loss over each
    interval of `warmup` steps (as paddle-run's log with --log-every WARMUP writes it). With `params` the
    run starts from paddle-run's parameter files; with shuffle=False the batches are the rows in file order,
    epoch after epoch, the last batch of an epoch short (as `paddle-run train --no-shuffle`). `optimizer`
    (cnn only): adam as the shipped net, or momentum as bench.py's variant of it; `knobs`: see KNOBS."""
    with knobs_applied(knobs):
        return _run(pixels, labels, threads, batch, iterations, warmup, model_name, params, shuffle, dropout,
                    optimizer, knobs)


def _run(pixels, labels, threads, batch, iterations, warmup, model_name, params, shuffle, dropout, optimizer,
         knobs):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    rows = pixels.shape[0]
    model, shape, lr_at = make_model(model_name, params, dropout)
    nhwc = "channels_last" in knobs and len(shape) == 3
    if nhwc:
        model = model.to(memory_format=torch.channels_last)
    model.train()
    if model_name == "fashion_lstm":  # as netdescs/fashion_lstm_fused.pbtxt
        opt = torch.optim.Adam(model.parameters(), lr=lr_at(0), betas=(0.9, 0.999), eps=1e-8)
    elif model_name in ("cnn", "cnn3") and optimizer == "momentum":  # bench.py's momentum variant of the net
        lr_at = cosine(CNN_MOMENTUM_LR, CNN_DECAY)
        opt = torch.optim.SGD(model.parameters(), lr=lr_at(0), momentum=0.9)
    elif model_name in ("cnn", "cnn3"):  # as netdescs/fashion_cnn.pbtxt and fashion_cnn3.pbtxt
        opt = torch.optim.Adam(model.parameters(), lr=lr_at(0), betas=(0.9, 0.999), eps=1e-8)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr_at(0), momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    order = lambda: torch.randperm(rows, generator=gen) if shuffle else torch.arange(rows)  # noqa: E731
    perm = order()
    pos = 0
    t_start = None
    losses, loss_sum, seen = [], 0.0, 0
    for step in range(iterations):
        if step == warmup:
            t_start = time.perf_counter()
        if pos >= rows or (shuffle and pos + batch > rows):
            perm = order()
            pos = 0
        idx = perm[pos:pos + batch]
        n = idx.shape[0]
        pos += n
        x = pixels[idx]
        if x.dtype == torch.uint8:  # the nets' cast and scale
            x = x.float().mul_(1.0 / 255.0)
        x = x.reshape((n,) + shape)
        if nhwc:
            x = x.contiguous(memory_format=torch.channels_last)
        y = labels[idx]
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        with torch.no_grad():
            prob = torch.softmax(logits, dim=1)
            acc = (prob.argmax(dim=1) == y).float().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        opt.step()
        loss_sum += loss.item() * n + 0 * acc.item()
        seen += n
        if (step + 1) % warmup == 0 or step + 1 == iterations:
            losses.append({"step": step + 1, "loss": loss_sum / seen})
            loss_sum, seen = 0.0, 0
    elapsed = time.perf_counter() - t_start
    steps = iterations - warmup
    return {"examples_per_sec": steps * batch / elapsed, "seconds": elapsed, "steps": steps,
            "loss": losses[-1]["loss"], "losses": losses,
            "model": model_name, "torch": torch.__version__, "threads": torch.get_num_threads()}


def infer(threads, batch, params, runs, knobs=()):
    """Inference of the MLP from paddle-run's parameters as `paddle-run infer --fetch prob` runs it (cast,
    scale, the three layers, softmax) under torch.no_grad(), on random uint8 pixels: seconds per batch for
    each of `runs` runs, each averaging enough calls to last ~20 ms (as bench_infer does). With the
    inference_mode knob, under torch.inference_mode() instead."""
    torch.set_num_threads(threads)
    no_grad = torch.inference_mode if "inference_mode" in knobs else torch.no_grad
    model, shape, _ = make_model("mlp", params)
    model.eval()
    x = torch.randint(0, 256, (batch, 28, 28), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))

    def once():
        with no_grad():
            return torch.softmax(model(x.float().mul_(1.0 / 255.0).reshape((batch,) + shape)), dim=1)
    for _ in range(5):
        once()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            once()
        if time.perf_counter() - t0 > 0.02:
            break
        n *= 2
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(n):
            once()
        out.append((time.perf_counter() - t0) / n)
    return {"seconds_per_batch": out, "calls": n}


def gemm(threads, n, runs=5):
    """GFLOP/s of an n x n x n float32 matmul on `threads` threads (median of `runs`, each ~50 ms): the product
    goes to BLIS, so this shows whether the environment made BLIS thread."""
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            a @ b
        if time.perf_counter() - t0 > 0.05:
            break
        reps *= 2
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(reps):
            a @ b
        out.append(2.0 * n ** 3 * reps / (time.perf_counter() - t0) * 1e-9)
    return {"gflops": sorted(out)[len(out) // 2], "all": out}


def seen():
    """What this process runs with: the threading variables it was started with and the kernels ATen uses."""
    show = torch.__config__.show()
    cap = show.split("CPU capability usage:")[1].split("\n")[0].strip() if "CPU capability usage:" in show else "?"
    return {"env": {k: os.environ[k] for k in PEER_ENV if k in os.environ}, "capability": cap,
            "mkldnn": torch.backends.mkldnn.is_available()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp", choices=["mlp", "cnn", "cnn3", "tiny", "fashion_lstm"])
    ap.add_argument("--data", nargs=2, metavar=("X.npy", "LABEL.npy"), help="data instead of Fashion-MNIST (tiny)")
    ap.add_argument("--threads", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--iterations", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--params", help="paddle-run parameter directory to start from")
    ap.add_argument("--no-shuffle", action="store_true", help="batches in file order")
    ap.add_argument("--dropout", type=float, default=0.5, help="cnn, cnn3: dropout probability")
    ap.add_argument("--optimizer", default="adam", choices=["adam", "momentum"], help="cnn, cnn3: the optimizer")
    ap.add_argument("--knob", action="append", default=[], choices=list(KNOBS), help="an in-process knob")
    ap.add_argument("--lm-quality", type=int, metavar="STEPS",
                    help="train char_lm STEPS steps from --params and print its validation loss (lm_quality)")
    ap.add_argument("--serve", action="store_true",
                    help="read JSON requests on stdin, one a line, answer each with a JSON line")
    a = ap.parse_args()
    torch.set_num_interop_threads(1)
    if a.lm_quality:
        print(json.dumps(lm_quality(a.threads or 1, a.lm_quality, a.params)))
        return 0
    pixels = torch.from_numpy(read_idx(DATA + "train-images-idx3-ubyte.gz").copy())
    labels = torch.from_numpy(read_idx(DATA + "train-labels-idx1-ubyte.gz").astype(np.int64))
    if a.data:
        pixels, labels = (torch.from_numpy(np.load(f)) for f in a.data)
        labels = labels.reshape(-1)
    if not a.serve:
        print(json.dumps(run(pixels, labels, a.threads, a.batch, a.iterations, a.warmup, a.model, a.params,
                             not a.no_shuffle, a.dropout, a.optimizer, a.knob)))
        return 0
    print(json.dumps(dict({"ready": True, "torch": torch.__version__}, **seen())), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("cmd") == "infer":
            print(json.dumps(infer(r["threads"], r["batch"], r["params"], r.get("runs", 1), r.get("knobs", ()))),
                  flush=True)
            continue
        if r.get("cmd") == "generate":
            print(json.dumps(generate(r["threads"], r.get("tokens", 1000), r.get("knobs", ()))), flush=True)
            continue
        if r.get("model") in LM_VARIANTS:
            print(json.dumps(run_lm(r["threads"], r["batch"], r["iterations"], r["warmup"], knobs=r.get("knobs", ()),
                                    params=r.get("params"), variant=r["model"])), flush=True)
            continue
        if r.get("cmd") == "gemm":
            print(json.dumps(gemm(r["threads"], r.get("n", 1024))), flush=True)
            continue
        px, lb = pixels, labels
        if r.get("data"):
            px, lb = (torch.from_numpy(np.load(f)) for f in r["data"])
            lb = lb.reshape(-1)
        print(json.dumps(run(px, lb, r["threads"], r["batch"], r["iterations"], r["warmup"],
                             r.get("model", a.model), r.get("params"), r.get("shuffle", True),
                             r.get("dropout", 0.5), r.get("optimizer", "adam"), r.get("knobs", ()))),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

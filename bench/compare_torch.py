#!/usr/bin/env python3
"""compare_torch.py — the training step of a paddle-run net in PyTorch (CPU),
for comparison with `paddle-run train`. Two models, both fed shuffled
mini-batches from the same Fashion-MNIST IDX files, uint8 pixels cast and
scaled to [0, 1] inside the step, softmax cross-entropy, and the softmax and
accuracy metric computed each step as the NetDescs do:
  mlp (netdescs/fashion_mlp.pbtxt): 784-512-256-10 with ReLU; SGD momentum
      0.9, lr 0.05.
  cnn (netdescs/fashion_cnn.pbtxt): conv 5x5 32 filters pad 2 stride 1 with
      bias -> relu -> max pool 2x2 stride 2 -> conv 5x5 64 filters pad 2 with
      bias -> relu -> max pool 2x2 -> flatten -> fc 3136x256 + relu ->
      dropout 0.5 (scaled in training) -> fc 256x10; Adam (0.9, 0.999, 1e-8),
      lr 0.002 on a cosine schedule over 4690 steps (set each step, as
      paddle-run does); xavier-uniform weights, zero biases.
Prints one JSON line: steady-state examples/s over the steps after the
first `--warmup` steps (the same interval paddle-run's log is read over).
With --serve it stays up (torch imported and data read once) and answers
one run per request line, so bench.py can alternate runs with paddle-run's.
    compare_torch.py [--model mlp|cnn] --threads N --batch B --iterations K --warmup W
    compare_torch.py --serve   < lines "BATCH THREADS ITERATIONS WARMUP [MODEL]" """
import argparse
import gzip
import json
import math
import sys
import time

import numpy as np
import torch

DATA = "/usr/share/datasets/fashion-mnist/"
CNN_LR, CNN_DECAY = 0.002, 4690  # fashion_cnn.pbtxt: adam lr 0.002, schedule cosine, decay_steps 4690


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def make_model(name):
    """The model, its input shape per example and its lr for each step."""
    nn = torch.nn
    if name == "mlp":
        model = nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 512), nn.ReLU(),
            nn.Linear(512, 256), nn.ReLU(),
            nn.Linear(256, 10))
        return model, (784,), lambda step: 0.05
    if name == "cnn":
        model = nn.Sequential(
            nn.Conv2d(1, 32, 5, stride=1, padding=2), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, 5, stride=1, padding=2), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 256), nn.ReLU(),
            nn.Dropout(0.5),
            nn.Linear(256, 10))
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    nn.init.xavier_uniform_(m.weight)
                    if m.bias is not None:
                        m.bias.zero_()

        def lr(step):
            f = min(step / CNN_DECAY, 1.0)
            return 0.5 * CNN_LR * (1 + math.cos(math.pi * f))
        return model, (1, 28, 28), lr
    raise ValueError(f"unknown model {name!r}")


def run(pixels, labels, threads, batch, iterations, warmup, model_name="mlp"):
    """One training run from fresh parameters; steady-state examples/s."""
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    rows = pixels.shape[0]
    model, shape, lr_at = make_model(model_name)
    model.train()
    if model_name == "cnn":  # as netdescs/fashion_cnn.pbtxt
        opt = torch.optim.Adam(model.parameters(), lr=lr_at(0), betas=(0.9, 0.999), eps=1e-8)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr_at(0), momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    perm = torch.randperm(rows, generator=gen)
    pos = 0
    t_start = None
    last_loss = 0.0
    for step in range(iterations):
        if step == warmup:
            t_start = time.perf_counter()
        if pos + batch > rows:
            perm = torch.randperm(rows, generator=gen)
            pos = 0
        idx = perm[pos:pos + batch]
        pos += batch
        x = pixels[idx].float().mul_(1.0 / 255.0).reshape((batch,) + shape)
        y = labels[idx]
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        with torch.no_grad():
            prob = torch.softmax(logits, dim=1)
            acc = (prob.argmax(dim=1) == y).float().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if model_name != "mlp":
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
        opt.step()
        last_loss = loss.item() + 0 * acc.item()
    elapsed = time.perf_counter() - t_start
    steps = iterations - warmup
    return {"examples_per_sec": steps * batch / elapsed, "seconds": elapsed, "steps": steps, "loss": last_loss,
            "model": model_name, "torch": torch.__version__, "threads": torch.get_num_threads()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    ap.add_argument("--threads", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--iterations", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--serve", action="store_true",
                    help="read 'BATCH THREADS ITERATIONS WARMUP [MODEL]' lines on stdin, answer each with a JSON line")
    a = ap.parse_args()
    torch.set_num_interop_threads(1)
    pixels = torch.from_numpy(read_idx(DATA + "train-images-idx3-ubyte.gz").copy())
    labels = torch.from_numpy(read_idx(DATA + "train-labels-idx1-ubyte.gz").astype(np.int64))
    if not a.serve:
        print(json.dumps(run(pixels, labels, a.threads, a.batch, a.iterations, a.warmup, a.model)))
        return 0
    print(json.dumps({"ready": True, "torch": torch.__version__}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        f = line.split()
        b, t, k, w = (int(x) for x in f[:4])
        print(json.dumps(run(pixels, labels, t, b, k, w, f[4] if len(f) > 4 else a.model)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

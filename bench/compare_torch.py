#!/usr/bin/env python3
"""compare_torch.py — the fashion_mlp training step in PyTorch (CPU), for
comparison with `paddle-run train`: the same 784-512-256-10 MLP with ReLU,
uint8 pixels cast and scaled to [0, 1] inside the step, softmax cross-entropy,
the softmax and accuracy metric computed each step as the NetDesc does, SGD
with momentum 0.9 and lr 0.05, shuffled mini-batches from the same IDX files.
Prints one JSON line: steady-state examples/s over the steps after the
first `--warmup` steps (the same interval paddle-run's log is read over).
With --serve it stays up (torch imported and data read once) and answers
one run per request line, so bench.py can alternate runs with paddle-run's.
    compare_torch.py --threads N --batch B --iterations K --warmup W
    compare_torch.py --serve   < lines "BATCH THREADS ITERATIONS WARMUP" """
import argparse
import gzip
import json
import sys
import time

import numpy as np
import torch

DATA = "/usr/share/datasets/fashion-mnist/"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def run(pixels, labels, threads, batch, iterations, warmup):
    """One training run from fresh parameters; steady-state examples/s."""
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    rows = pixels.shape[0]
    model = torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(784, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
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
        x = pixels[idx].float().mul_(1.0 / 255.0)
        y = labels[idx]
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        with torch.no_grad():
            prob = torch.softmax(logits, dim=1)
            acc = (prob.argmax(dim=1) == y).float().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        last_loss = loss.item() + 0 * acc.item()
    elapsed = time.perf_counter() - t_start
    steps = iterations - warmup
    return {"examples_per_sec": steps * batch / elapsed, "seconds": elapsed, "steps": steps, "loss": last_loss,
            "torch": torch.__version__, "threads": torch.get_num_threads()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--iterations", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--serve", action="store_true",
                    help="read 'BATCH THREADS ITERATIONS WARMUP' lines on stdin, answer each with a JSON line")
    a = ap.parse_args()
    torch.set_num_interop_threads(1)
    pixels = torch.from_numpy(read_idx(DATA + "train-images-idx3-ubyte.gz").copy())
    labels = torch.from_numpy(read_idx(DATA + "train-labels-idx1-ubyte.gz").astype(np.int64))
    if not a.serve:
        print(json.dumps(run(pixels, labels, a.threads, a.batch, a.iterations, a.warmup)))
        return 0
    print(json.dumps({"ready": True, "torch": torch.__version__}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        b, t, k, w = (int(x) for x in line.split())
        print(json.dumps(run(pixels, labels, t, b, k, w)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

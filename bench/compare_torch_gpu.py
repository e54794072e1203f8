#!/usr/bin/env python3
"""compare_torch_gpu.py — a shipped net's training step in PyTorch eager on
a CUDA GPU, for `make bench`'s gpu section. --net mlp (netdescs/
fashion_mlp.pbtxt): 784-512-256-10 with ReLU, SGD momentum 0.9, lr 0.05;
--net cnn (netdescs/fashion_cnn.pbtxt): two 5x5 convolutions (32, 64, padding
2) each with ReLU and 2x2 max pooling, fc 256 + ReLU, dropout 0.5, fc 10,
Adam lr 0.002 (cuDNN's convolutions, as PyTorch picks them with
cudnn.benchmark on); --net lstm (netdescs/fashion_lstm_fused.pbtxt): each
image's 28 rows as 28 steps into torch.nn.LSTM(28, 128) (cuDNN's), fc 10
on the last h, Adam lr 0.001. All: uint8 pixels cast and scaled inside the step,
softmax cross-entropy, softmax and accuracy each step, float32 with TF32 off
(as paddle-run without --tf32). The batches are
shuffled from the Fashion-MNIST IDX files and copied to the GPU each step,
as paddle-run's are. Prints one JSON line, steady-state examples/s over the
steps after --warmup (the loss is read every step, as paddle-run's log does),
or {"skipped": why} where torch has no CUDA.
    compare_torch_gpu.py [--net mlp|cnn|lstm] --batch B --iterations K --warmup W"""
import argparse
import gzip
import json
import sys
import time

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist/"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def optimizer(cls, params, **kw):
    """The peer at its best: the fused (one-kernel) optimizer step where this PyTorch has it."""
    params = list(params)
    try:
        return cls(params, fused=True, **kw)
    except (TypeError, RuntimeError):
        return cls(params, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--net", choices=("mlp", "cnn", "lstm"), default="mlp")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--iterations", type=int, default=600)
    ap.add_argument("--warmup", type=int, default=100)
    a = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"skipped": f"no torch: {e}"}))
        return
    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "torch sees no CUDA GPU"}))
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # the fastest convolution algorithms for these shapes
    dev = torch.device("cuda")
    x_all = torch.from_numpy(read_idx(DATA + "train-images-idx3-ubyte.gz").copy()).pin_memory()
    y_all = torch.from_numpy(read_idx(DATA + "train-labels-idx1-ubyte.gz").astype(np.int64)).pin_memory()
    torch.manual_seed(1)
    nn = torch.nn
    if a.net == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                              nn.Linear(256, 10)).to(dev)
        opt = optimizer(torch.optim.SGD, model.parameters(), lr=0.05, momentum=0.9)
    elif a.net == "lstm":
        class Lstm(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm, self.fc = nn.LSTM(28, 128, batch_first=True), nn.Linear(128, 10)

            def forward(self, x):
                return self.fc(self.lstm(x)[1][0][0])

        model = Lstm().to(dev)
        opt = optimizer(torch.optim.Adam, model.parameters(), lr=0.001)
    else:
        model = nn.Sequential(nn.Unflatten(1, (1, 28)), nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(3136, 256), nn.ReLU(), nn.Dropout(0.5), nn.Linear(256, 10)).to(dev)
        opt = optimizer(torch.optim.Adam, model.parameters(), lr=0.002)
    n = x_all.shape[0]
    perm = torch.randperm(n)
    t0, done = None, 0
    for step in range(a.iterations):
        if step == a.warmup:
            torch.cuda.synchronize()
            t0, done = time.perf_counter(), 0
        start = (step * a.batch) % (n - a.batch)
        idx = perm[start:start + a.batch]
        x = x_all[idx].to(dev, non_blocking=True)
        y = y_all[idx].to(dev, non_blocking=True)
        logits = model(x.float().mul_(1 / 255.0))
        prob = torch.softmax(logits, 1)
        loss = torch.nn.functional.cross_entropy(logits, y)
        acc = (prob.argmax(1) == y).float().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item(), acc.item()  # read back each step, as paddle-run reads its loss
        done += a.batch
    torch.cuda.synchronize()
    print(json.dumps({"examples_per_sec": done / (time.perf_counter() - t0), "device": torch.cuda.get_device_name(), "net": a.net,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    sys.exit(main())

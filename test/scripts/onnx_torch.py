# onnx_torch.py — PyTorch's exports of its own small models, as a user has
# them: each model is exported here with torch.onnx.export (Debian's
# python3-torch) at opsets 13 and 17 with a fixed batch of 2 (torch's
# default), imported with `paddle-run import`, run with `paddle-run infer`
# on 5 rows (the batch became -1: the import must say so) and compared
# with PyTorch's output on those rows to 1e-5. Models: an MLP, a CNN with
# x.view(x.size(0), -1) (also with dynamic_axes, which writes the
# Shape/Gather/Unsqueeze/Concat chain), Dropout in eval (torch writes no
# node for it), LeakyReLU, GELU
# (torch writes its erf decomposition), LayerNorm (opset 13: the ReduceMean
# decomposition, 17: LayerNormalization), Softplus, ReLU6 and clamp (Clip),
# nn.Upsample nearest (Resize), ConstantPad2d and ReflectionPad2d (Pad),
# torch.flatten, slicing with steps, from the end and of a flip (Slice
# over data), unsqueeze and squeeze of a computed value. A model whose op is not in this build (paddle-run ops)
# must be refused by import naming it; the script says which.
import io, os, subprocess, sys
import numpy as np

try:
    import onnx
    import torch
except ImportError as e:
    print(f"skipped: {e.name} is not installed (python3-onnx, python3-torch)")
    sys.exit(77)

PR = os.environ["PR"]
torch.manual_seed(3)
OPS = subprocess.run([PR, "ops"], capture_output=True, text=True).stdout.split()


def run(*args, code=0):
    p = subprocess.run([PR, *args], capture_output=True, text=True)
    if p.returncode != code:
        print(f"FAIL: paddle-run {' '.join(args)}: exit {p.returncode}, wanted {code}\n{p.stdout}{p.stderr}")
        sys.exit(1)
    return p.stdout + p.stderr


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 4 * 4, 5)
        self.drop = torch.nn.Dropout(0.3)

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc(self.drop(y.view(y.size(0), -1)))


class Flat(torch.nn.Module):
    def forward(self, x):
        return torch.flatten(x, 1) * 2


class Slices(torch.nn.Module):
    def forward(self, x):
        return torch.cat([x[:, 1:7:2], x[:, -3:], x.flip(1)[:, 2:4]], 1) * 2


class Squeezes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(9, 4)

    def forward(self, x):
        y = torch.relu(self.fc(x)).unsqueeze(1) * 2
        return y.squeeze(1) + 1


class Clamp(torch.nn.Module):
    def forward(self, x):
        return torch.clamp(x, -0.5, 0.7)


def seq(*m):
    return torch.nn.Sequential(*m)


def layer_norm():
    ln = torch.nn.LayerNorm(6)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5), ln.bias.uniform_(-0.5, 0.5)
    return ln


# name, model, input row shape, the ops it needs, export options
MODELS = [
    ("mlp", seq(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)), (12,), [], {}),
    ("cnn_view", CNN(), (1, 8, 8), [], {}),
    ("cnn_view_dynamic", CNN(), (1, 8, 8), [], {"dynamic_axes": {"x": {0: "N"}, "y": {0: "N"}}}),
    ("dropout", seq(torch.nn.Linear(6, 6), torch.nn.Dropout(0.5)), (6,), [], {}),
    ("leaky_relu", seq(torch.nn.Linear(6, 6), torch.nn.LeakyReLU(0.2)), (6,), ["leaky_relu"], {}),
    ("gelu", seq(torch.nn.Linear(6, 6), torch.nn.GELU()), (6,), ["gelu"], {}),
    ("layer_norm", seq(torch.nn.Linear(6, 6), layer_norm()), (3, 6), ["layer_norm"], {}),
    ("softplus", seq(torch.nn.Linear(6, 6), torch.nn.Softplus()), (6,), ["softplus"], {}),
    ("relu6", seq(torch.nn.Linear(6, 6), torch.nn.ReLU6()), (6,), ["clip"], {}),
    ("clamp", seq(torch.nn.Linear(6, 6), Clamp()), (6,), ["clip"], {}),
    ("upsample", torch.nn.Upsample(scale_factor=2, mode="nearest"), (3, 4, 5), ["resize_nearest"], {}),
    ("constant_pad", torch.nn.ConstantPad2d((1, 2, 0, 1), 0.5), (3, 4, 4), ["pad"], {}),
    ("reflection_pad", torch.nn.ReflectionPad2d((1, 2, 0, 1)), (3, 4, 4), ["pad"], {}),
    ("flatten", Flat(), (3, 4), [], {}),
    ("slices", Slices(), (9,), ["slice"], {}),
    ("squeezes", Squeezes(), (9,), [], {}),
]

pending, checked = set(), 0
for name, model, row, needs, opts in MODELS:
    model.eval()
    for opset in (13, 17):
        tag = f"{name}_{opset}"
        x2 = torch.randn(2, *row)
        f = io.BytesIO()
        torch.onnx.export(model, x2, f, opset_version=opset, input_names=["x"], output_names=["y"], **opts)
        with open(f"{tag}.onnx", "wb") as out:
            out.write(f.getvalue())
        types = {n.op_type for n in onnx.load_from_string(f.getvalue()).graph.node}
        if name == "cnn_view_dynamic" and "Shape" not in types:
            print(f"FAIL: {tag}: torch wrote no Shape chain ({sorted(types)}); the test no longer covers it")
            sys.exit(1)
        if name == "layer_norm" and ("LayerNormalization" in types) != (opset >= 17):
            print(f"FAIL: {tag}: unexpected ops {sorted(types)}")
            sys.exit(1)
        missing = [op for op in needs if op not in OPS]
        if missing:
            out = run("import", f"{tag}.onnx", "-o", f"{tag}.pbtxt", "--params-out", f"{tag}.p", code=2)
            if "not in this build" not in out:
                print(f"FAIL: {tag}: import without {missing} did not say so:\n{out}")
                sys.exit(1)
            pending.update(missing)
            continue
        out = run("import", f"{tag}.onnx", "-o", f"{tag}.pbtxt", "--params-out", f"{tag}.p")
        if "batch: kept" in out or ("dynamic_axes" not in opts and "the exported batch 2 is -1" not in out):
            print(f"FAIL: {tag}: the batch did not become -1:\n{out}")
            sys.exit(1)
        x5 = torch.randn(5, *row)
        with torch.no_grad():
            want = model(x5).numpy()
        np.save(f"{tag}.x.npy", x5.numpy())
        run("infer", f"{tag}.pbtxt", "--params", f"{tag}.p", "--data", f"x={tag}.x.npy", "--fetch", f"y={tag}.y.npy")
        got = np.load(f"{tag}.y.npy")
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
            diff = np.abs(got - want).max() if got.shape == want.shape else "shape"
            print(f"FAIL: {tag}: got {got.shape}, PyTorch {want.shape}; max difference {diff}")
            sys.exit(1)
        print(f"ok: {tag} ({', '.join(sorted(types))}): 5 rows match PyTorch, max difference {np.abs(got - want).max():.2g}")
        checked += 1

# the one view export with the batch's value used: kept fixed, and said so
x = torch.randn(2, 6)


class UsesBatch(torch.nn.Module):
    def forward(self, x):
        return x.reshape(1, -1)


torch.onnx.export(UsesBatch(), x, "uses_batch.onnx", opset_version=13, input_names=["x"], output_names=["y"])
out = run("import", "uses_batch.onnx", "-o", "uses_batch.pbtxt", "--params-out", "ub.p")
if "batch: kept at 2" not in out:
    print(f"FAIL: uses_batch: the batch should stay 2:\n{out}")
    sys.exit(1)
np.save("ub.x.npy", x.numpy())
run("infer", "uses_batch.pbtxt", "--params", "ub.p", "--data", "x=ub.x.npy", "--fetch", "y=ub.y.npy")
if not np.array_equal(np.load("ub.y.npy"), x.reshape(1, -1).numpy()):
    print("FAIL: uses_batch: wrong values")
    sys.exit(1)
print("ok: x.reshape(1, -1) keeps the batch at 2 and says why")
if pending:
    print(f"note: ops not in this build yet, their models checked as refused: {', '.join(sorted(pending))}")
print(f"ok: {checked} exports match PyTorch")

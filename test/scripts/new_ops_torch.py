# new_ops_torch.py — leaky_relu, gelu (none, tanh), softplus, clip (both
# bounds, one, the other), layer_norm (last dim, last two; with Scale and
# Bias, Scale alone, neither), pad (constant, reflect, edge) and
# resize_nearest (2 x 2, 1.5 x 3) against PyTorch's functions on the same
# values, through the CLI: the forward by `infer`, the gradients of X, Scale
# and Bias by one SGD step at lr 1 of the loss sum(Out * G) (the gradient is
# before - after). float64 to 1e-12, float32 to 1e-6 (relative to the
# tensor's largest element). Skips (77) without python3-torch.
import os, subprocess, sys
import numpy as np

PR = os.environ["PR"]
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("PyTorch is not installed (python3-torch): skipped")
    sys.exit(77)
torch.set_num_threads(1)


def attrs(**kw):
    out = ""
    for k, v in kw.items():
        if isinstance(v, str):
            body = f's: "{v}"'
        elif isinstance(v, list) and all(isinstance(e, int) for e in v):
            body = f"ints: {v}"
        elif isinstance(v, list):
            body = f"floats: {v}"
        elif isinstance(v, int):
            body = f"i: {v}"
        else:
            body = f"f: {v!r}"
        out += f' attrs {{ key: "{k}" value {{ {body} }} }}'
    return out


# name, op type, attributes, X's shape, parameters (name: shape) in slot
# order after X ("" for one left out), and PyTorch's function of (x, *params)
CASES = [
    ("leaky_relu", "leaky_relu", {}, (4, 9), [], lambda x: F.leaky_relu(x)),
    ("leaky_relu alpha 0.2", "leaky_relu", {"alpha": 0.2}, (4, 9), [], lambda x: F.leaky_relu(x, 0.2)),
    ("gelu", "gelu", {}, (4, 9), [], lambda x: F.gelu(x)),
    ("gelu tanh", "gelu", {"approximate": "tanh"}, (4, 9), [], lambda x: F.gelu(x, approximate="tanh")),
    ("softplus", "softplus", {}, (4, 9), [], lambda x: F.softplus(x)),
    ("clip [-1, 0.5]", "clip", {"min": -1.0, "max": 0.5}, (4, 9), [], lambda x: torch.clamp(x, -1.0, 0.5)),
    ("clip min -0.7", "clip", {"min": -0.7}, (4, 9), [], lambda x: torch.clamp(x, min=-0.7)),
    ("clip max 0.3", "clip", {"max": 0.3}, (4, 9), [], lambda x: torch.clamp(x, max=0.3)),
    ("layer_norm axis -1", "layer_norm", {"epsilon": 1e-5}, (3, 4, 6), [("s", (6,)), ("b", (6,))],
     lambda x, s, b: F.layer_norm(x, (6,), s, b, 1e-5)),
    ("layer_norm axis 1, Scale only", "layer_norm", {"axis": 1, "epsilon": 0.001}, (3, 4, 6), [("s", (4, 6)), ""],
     lambda x, s: F.layer_norm(x, (4, 6), s, None, 0.001)),
    ("layer_norm axis -2, none", "layer_norm", {"axis": -2}, (3, 4, 6), [],
     lambda x: F.layer_norm(x, (4, 6), None, None, 1e-5)),
    ("pad constant", "pad", {"pads": [0, 0, 1, 2, 0, 0, 2, 1], "value": 0.5}, (2, 3, 5, 6), [],
     lambda x: F.pad(x, (2, 1, 1, 2), mode="constant", value=0.5)),
    ("pad reflect", "pad", {"pads": [0, 0, 4, 2, 0, 0, 3, 5], "mode": "reflect"}, (2, 3, 5, 6), [],
     lambda x: F.pad(x, (2, 5, 4, 3), mode="reflect")),
    ("pad edge", "pad", {"pads": [0, 0, 3, 0, 0, 0, 2, 4], "mode": "edge"}, (2, 3, 5, 6), [],
     lambda x: F.pad(x, (0, 4, 3, 2), mode="replicate")),
    ("resize_nearest 2 x 2", "resize_nearest", {"scales": [2.0, 2.0]}, (2, 3, 5, 4), [],
     lambda x: F.interpolate(x, scale_factor=(2.0, 2.0), mode="nearest")),
    ("resize_nearest 1.5 x 3", "resize_nearest", {"scales": [1.5, 3.0]}, (2, 3, 5, 4), [],
     lambda x: F.interpolate(x, scale_factor=(1.5, 3.0), mode="nearest")),
]


def run(*args):
    r = subprocess.run([PR, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: paddle-run {' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")


def check(what, got, want, tol):
    assert got.shape == want.shape, f"{what}: shape {got.shape}, PyTorch {want.shape}"
    assert not np.isnan(want).any()
    err = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30)
    if not err <= tol:
        sys.exit(f"FAIL: {what}: off by {err:.3g} (relative to its largest element) against PyTorch, want <= {tol}")
    return err


rng = np.random.default_rng(22)
for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-6)):
    worst = 0
    for name, op, at, shape, params, fn in CASES:
        x = (rng.normal(size=shape) * 2).astype(dt)
        pv = [None if p == "" else (rng.uniform(0.5, 1.5, p[1]) if p[0] == "s" else rng.normal(size=p[1])).astype(dt)
              for p in params]
        tx = torch.tensor(x, requires_grad=True)
        tp = [torch.tensor(v, requires_grad=True) for v in pv if v is not None]
        ty = fn(tx, *tp)
        g = rng.normal(size=tuple(ty.shape)).astype(dt)
        (ty * torch.tensor(g)).sum().backward()
        dtn = "FLOAT64" if dt == np.float64 else "FLOAT32"
        subprocess.run(["rm", "-rf", "p", "p_out"])
        os.makedirs("p")
        np.save("p/x.npy", x)
        np.save("p/g.npy", g)
        net = f'var {{ name: "x" kind: PARAM shape: {list(shape)} dtype: {dtn} }}\n'
        net += f'var {{ name: "g" kind: PARAM shape: {list(g.shape)} dtype: {dtn} }}\n'
        ins = ["x"]
        for p, v in zip(params, pv):
            if v is None:
                ins.append("")
                continue
            np.save(f"p/{p[0]}.npy", v)
            net += f'var {{ name: "{p[0]}" kind: PARAM shape: {list(p[1])} dtype: {dtn} }}\n'
            ins.append(p[0])
        net += f'op {{ type: "{op}" inputs: {ins!r} outputs: "y"{attrs(**at)} }}\n'.replace("'", '"')
        net += ('op { type: "broadcast_mul" inputs: ["y", "g"] outputs: "yg" }\n'
                'op { type: "mean" inputs: "yg" outputs: "m" }\n'
                f'op {{ type: "scale" inputs: "m" outputs: "loss"{attrs(scale=float(g.size))} }}\n'
                'train { loss: "loss" batch_size: 1 seed: 1 shuffle: false optimizer { type: "sgd" lr: 1 } }\n')
        open("t.pbtxt", "w").write(net)
        run("infer", "t.pbtxt", "--params", "p", "--fetch", "y=y.npy")
        e = check(f"{name} {dtn} forward", np.load("y.npy"), ty.detach().numpy(), tol)
        run("train", "t.pbtxt", "--params", "p", "--iterations", "1", "--save", "p_out")
        grads = [("x", tx)] + [(p[0], t) for p, t in zip([p for p in params if p != ""], tp)]
        for pn, t in grads:
            d = np.load(f"p/{pn}.npy").astype(np.float64) - np.load(f"p_out/step-00000001/{pn}.npy")
            # float32: before - after carries the rounding of the step, ~1e-7 of the value
            e = max(e, check(f"{name} {dtn} d{pn}", d, t.grad.numpy().astype(np.float64), tol))
        worst = max(worst, e)
    print(f"ok: {len(CASES)} cases in {np.dtype(dt).name}, forward and gradients match PyTorch "
          f"{torch.__version__} (worst {worst:.1e})")

# onnx_cli_conformance.py — ONNX's backend test data (Debian's
# libonnx-testdata, ONNX 1.12: data/node, pytorch-converted,
# pytorch-operator, simple) through the command line, as a user runs it:
# `paddle-run import MODEL -o NET --params-out DIR`, every
# test_data_set_*/input_*.pb converted to .npy (python3-onnx), `paddle-run
# infer NET --params DIR --data NAME=FILE.npy... --fetch OUT=FILE.npy...`,
# and each output compared with output_*.pb: same dtype and shape,
# |got - want| <= 1e-7 + 1e-3 |want| (the library harness's tolerance,
# test/scripts/onnx_conformance.sh). Graph inputs the import lists as
# weights go into the parameter directory as NAME.npy; a graph input the
# import needs as a constant is made an initializer from the test's own
# input (as the library harness folds it). A model the import refuses as
# unsupported (exit 2) is skipped. Fails on any failure and when the
# counts differ from those recorded here (and in docs/onnx.md).
import os, shutil, subprocess, sys, tempfile
import numpy as np

try:
    import onnx
    from onnx import numpy_helper
except ImportError:
    print("skipped: python3-onnx is not installed")
    sys.exit(77)

EXPECT = "261 passed, 0 failed, 811 skipped (54 with inputs folded as constants)"
ROOT = "/usr/share/libonnx-testdata/data"
if not os.path.isdir(f"{ROOT}/node"):
    print("skipped: libonnx-testdata is not installed")
    sys.exit(77)
PR = os.environ["PR"]
WORK = tempfile.mkdtemp(dir=".")


def pr(*args):
    p = subprocess.run([PR, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def listed(out, prefix):
    for line in out.splitlines():
        if line.startswith(prefix):
            return line[len(prefix) :].split()
    return []


def close(got, want):
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, want {want.dtype}"
    if got.shape != want.shape and not (want.ndim == 0 and got.size == 1):
        return f"shape {got.shape}, want {want.shape}"
    got = got.reshape(want.shape)
    if want.dtype.kind == "f":
        bad = ~(np.abs(got.astype(np.float64) - want) <= 1e-7 + 1e-3 * np.abs(want))
        bad &= ~(np.isnan(got) & np.isnan(want))
    else:
        bad = got != want
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        return f"element {i}: got {got.flat[i]}, want {want.flat[i]}"
    return None


def run_test(tdir, res):
    model = onnx.load(f"{tdir}/model.onnx")
    inits = {t.name for t in model.graph.initializer}
    orig = [i.name for i in model.graph.input if i.name not in inits]
    folded = 0
    while True:
        shutil.rmtree(WORK)
        os.mkdir(WORK)
        onnx.save(model, f"{WORK}/m.onnx")
        rc, out = pr("import", f"{WORK}/m.onnx", "-o", f"{WORK}/net.pbtxt", "--params-out", f"{WORK}/p")
        # a graph input needed as a constant: from the test's own input file
        need = [n for n in orig if f'"{n}" must be a constant' in out]
        if rc == 0 or not need or not os.path.exists(f"{tdir}/test_data_set_0/input_{orig.index(need[0])}.pb"):
            break
        t = onnx.TensorProto()
        with open(f"{tdir}/test_data_set_0/input_{orig.index(need[0])}.pb", "rb") as f:
            t.ParseFromString(f.read())
        t.name = need[0]
        model.graph.initializer.append(t)
        folded += 1
    if rc != 0:
        if "unsupported" in out and rc == 2:
            res["skipped"] += 1
            return None
        return out.strip().splitlines()[-1]
    data, weights = listed(out, "inputs:"), listed(out, "weights given as graph inputs (put NAME.npy for each in the parameter directory):")
    outs = [o.name for o in model.graph.output]
    for s in sorted(d for d in os.listdir(tdir) if d.startswith("test_data_set_")):
        args, k = [], 0
        while os.path.exists(f"{tdir}/{s}/input_{k}.pb"):
            t = onnx.TensorProto()
            with open(f"{tdir}/{s}/input_{k}.pb", "rb") as f:
                t.ParseFromString(f.read())
            name = t.name or (orig[k] if k < len(orig) else "")
            a = numpy_helper.to_array(t)
            if name in weights:
                np.save(f"{WORK}/p/{name}.npy", a)
            elif name in data:
                np.save(f"{WORK}/in{k}.npy", a)
                args += ["--data", f"{name}={WORK}/in{k}.npy"]
            k += 1
        for j, o in enumerate(outs):
            args += ["--fetch", f"{o}={WORK}/out{j}.npy"]
        rc, out = pr("infer", f"{WORK}/net.pbtxt", "--params", f"{WORK}/p", *args)
        if rc != 0:
            return f"{s}: infer exit {rc}: {out.strip().splitlines()[-1]}"
        j = 0
        while os.path.exists(f"{tdir}/{s}/output_{j}.pb"):
            t = onnx.TensorProto()
            with open(f"{tdir}/{s}/output_{j}.pb", "rb") as f:
                t.ParseFromString(f.read())
            name = t.name or outs[j]
            why = close(np.load(f"{WORK}/out{outs.index(name)}.npy"), numpy_helper.to_array(t))
            if why:
                return f"{s}: output {name}: {why}"
            j += 1
        for f in os.listdir(WORK):
            if f.startswith(("in", "out")):
                os.remove(f"{WORK}/{f}")
    res["passed"] += 1
    res["folded"] += folded > 0
    return None


total = {"passed": 0, "failed": 0, "skipped": 0, "folded": 0}
for d in ("node", "pytorch-converted", "pytorch-operator", "simple"):
    res = {"passed": 0, "failed": 0, "skipped": 0, "folded": 0}
    for t in sorted(os.listdir(f"{ROOT}/{d}")):
        if not os.path.exists(f"{ROOT}/{d}/{t}/model.onnx"):
            continue
        why = run_test(f"{ROOT}/{d}/{t}", res)
        if why:
            res["failed"] += 1
            print(f"fail {d}/{t}: {why}")
    print(f"{d}: {res['passed']} passed, {res['failed']} failed, {res['skipped']} skipped")
    for k in total:
        total[k] += res[k]
got = f"{total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped ({total['folded']} with inputs folded as constants)"
print(got)
if total["failed"]:
    sys.exit(1)
if got != EXPECT:
    print(f'FAIL: counts changed: got "{got}", recorded "{EXPECT}"')
    sys.exit(1)
print(f"ok: {got}")

#!/usr/bin/python3
"""left_out.py — parameters and optional outputs left out of an op
(docs/netdesc.md, "Left out").

The two nets of that section (written out in full, and with them left out)
load to the same `desc`, with the line and name counts the section gives;
the short one trains, and its checkpoint, named as `desc` names the
parameters, serves the long one in `infer` with the same result, and
`export` writes it as ONNX. A NetDesc that names its first parameter keeps
its meaning: `fc` with ["x", "w"] still has no bias. The fused recurrent
ops make W, R and B as <Y>.w, .r, .b, the same net as naming them, and
gradcheck passes through them.
"""
import os
import re
import subprocess
import sys

import numpy as np

PR = os.environ["PR"]
ROOT = os.environ["ROOT"]


def run(*args):
    r = subprocess.run([PR] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAIL: paddle-run %s: exit %d\n%s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


def block(doc, name):
    m = re.search(r"<!-- left-out: %s -->\n(.*?)<!-- left-out: end -->" % name, doc, re.S)
    if not m:
        sys.exit("FAIL: docs/netdesc.md has no left-out %s block" % name)
    return "".join(line[4:] + "\n" for line in m.group(1).splitlines())


def main():
    with open(os.path.join(ROOT, "docs", "netdesc.md")) as f:
        doc = f.read()
    before, after = block(doc, "before"), block(doc, "after")
    with open("before.pbtxt", "w") as f:
        f.write(before)
    with open("after.pbtxt", "w") as f:
        f.write(after)
    made = re.compile(r'"(c1\.[wb]|bn1\.(scale|bias|mean|var)|h1\.[wb]|logits\.[wb]|d1@MASK)"')
    counts = (before.count("\n"), len(made.findall(before)), after.count("\n"), len(made.findall(after)))
    said = re.search(r"written out in full, (\d+) lines with (\d+) names.*?left out, (\d+) lines and none", doc, re.S)
    if not said or tuple(int(x) for x in said.groups()) != counts[:3] or counts[3] != 0:
        sys.exit("FAIL: the docs' counts %s, the nets' (lines, names, lines, names) %s" %
                 (said and said.groups(), counts))
    if run("desc", "before.pbtxt") != run("desc", "after.pbtxt"):
        sys.exit("FAIL: the two nets load differently")
    desc = run("desc", "after.pbtxt")
    for v in ("c1.w", "bn1.scale", "bn1.mean", "h1.w", "logits.b", "d1@MASK"):
        if '"%s"' % v not in desc:
            sys.exit("FAIL: desc does not name %s" % v)
    print("ok: before (%d lines, %d names) and after (%d lines) load to the same desc" % counts[:3])

    rng = np.random.RandomState(1)
    np.save("img.npy", rng.rand(16, 1, 28, 28).astype(np.float32))
    np.save("label.npy", rng.randint(0, 10, (16, 1)).astype(np.int64))
    run("train", "after.pbtxt", "--data", "img=img.npy", "--data", "label=label.npy", "--iterations", "2",
        "--batch-size", "8", "--save", "ck")
    step = os.path.join("ck", "step-00000002")
    files = set(os.listdir(step))
    want = {"c1.w.npy", "c1.b.npy", "bn1.scale.npy", "bn1.bias.npy", "bn1.mean.npy", "bn1.var.npy", "h1.w.npy",
            "h1.b.npy", "logits.w.npy", "logits.b.npy"}
    if not want <= files or "d1@MASK.npy" in files:
        sys.exit("FAIL: the checkpoint holds %s" % sorted(files))
    outs = []
    for net in ("after.pbtxt", "before.pbtxt"):
        run("infer", net, "--params", step, "--data", "img=img.npy", "--fetch", "logits=%s.npy" % net)
        outs.append(np.load("%s.npy" % net))
    if not np.array_equal(outs[0], outs[1]):
        sys.exit("FAIL: the checkpoint of the short net infers differently in the long one")
    print("ok: its checkpoint (%d files) serves both nets alike" % len(want))
    run("export", "after.pbtxt", "--params", step, "-o", "m.onnx")
    print("ok: export writes it as ONNX")

    # naming W but not B: no bias, as before
    with open("nobias.pbtxt", "w") as f:
        f.write('var { name: "x" shape: [-1, 4] }\n'
                'op { type: "fc" inputs: ["x", "w"] outputs: "y" attrs { key: "size" value { i: 2 } } }\n')
    d = run("desc", "nobias.pbtxt")
    if '"y.b"' in d or '"y.w"' in d:
        sys.exit("FAIL: fc with W named got a bias or a made W:\n" + d)
    print("ok: fc naming W alone still has no bias")

    # the fused recurrent ops: W, R, B made after X; the same desc as the net
    # that names them, and gradients through the made names in float64
    ops = [("lstm", "y", "xs", 4, ""), ("gru", "g", "y", 3, ' attrs { key: "direction" value { s: "bidirectional" } }'),
           ("rnn", "r", "g", 2, "")]
    short, full = ['var { name: "xs" shape: [-1, 5, 3] }'], ['var { name: "xs" shape: [-1, 5, 3] }']
    for t, o, i, h, extra in ops:
        attrs = 'attrs { key: "hidden_size" value { i: %d } }%s' % (h, extra)
        short.append('op { type: "%s" inputs: ["%s"] outputs: "%s" %s }' % (t, i, o, attrs))
        full.append('op { type: "%s" inputs: ["%s", "%s.w", "%s.r", "%s.b"] outputs: "%s" %s }' % (t, i, o, o, o, o, attrs))
    tail = ['op { type: "mean" inputs: "r" outputs: "loss" }', 'train { loss: "loss" batch_size: 4 optimizer { type: "sgd" lr: 0.1 } }']
    for name, lines in (("rnn_short", short), ("rnn_full", full)):
        with open(name + ".pbtxt", "w") as f:
            f.write("\n".join(lines + tail) + "\n")
    d = run("desc", "rnn_short.pbtxt")
    if d != run("desc", "rnn_full.pbtxt"):
        sys.exit("FAIL: lstm/gru/rnn with their weights left out differ from the net naming them:\n" + d)
    for made in ("y.w", "y.r", "y.b", "g.w", "g.r", "g.b", "r.w", "r.r", "r.b"):
        if '"%s"' % made not in d:
            sys.exit("FAIL: %s not made:\n%s" % (made, d))
    np.save("xs.npy", np.random.default_rng(2).standard_normal((6, 5, 3)).astype(np.float32))
    out = run("gradcheck", "rnn_short.pbtxt", "--data", "xs=xs.npy")
    if "checked 9 parameters" not in out:
        sys.exit("FAIL: gradcheck of the made recurrent weights:\n" + out)
    print("ok: lstm, gru, rnn make <Y>.w, .r, .b; the same desc as naming them; gradcheck passes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

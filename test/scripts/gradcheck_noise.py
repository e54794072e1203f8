# gradcheck_noise.py — `paddle-run gradcheck` against the rounding of the
# numeric derivative: a gradient that is 0 analytically (a constant added to
# every logit before softmax_with_cross_entropy, the loss scaled by 1000)
# gives a numeric value of a few ulps of the loss over 2h (-2.3e-7 against
# an analytic -1.7e-14), which was reported as a relative error of 2.3e-4;
# now a difference within 16 ulps of the loss over 2h counts as 0, so it
# passes. Genuinely wrong gradients still fail, a factor 2 as much as one
# that is off by 1e-5: part of the forward value bypasses the backward
# (a no_gradient copy of h added to h).
import os, re, subprocess
import numpy as np

PR = os.environ["PR"]
rng = np.random.default_rng(2)
np.save("x.npy", (rng.normal(size=(8, 5)) * 3).astype(np.float32))
np.save("y.npy", rng.integers(0, 7, (8, 1)).astype(np.int64))
HEAD = """
var { name: "x" shape: [-1, 5] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
"""
TAIL = """
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg" }
"""
open("zero.pbtxt", "w").write('name: "zero"' + HEAD + """
var { name: "c" shape: [1] kind: PARAM }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "pre" attrs { key: "size" value { i: 7 } } }
op { type: "elementwise_add" inputs: ["pre", "c"] outputs: "logits" }
""" + TAIL + """
op { type: "scale" inputs: "avg" outputs: "big" attrs { key: "scale" value { f: 1000 } } }
train { loss: "big" seed: 1 data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
""")
for name, k in (("half", "1"), ("slight", "1e-5")):
    open(f"{name}.pbtxt", "w").write(f'name: "{name}"' + HEAD + """
var { name: "h2" no_gradient: true }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 7 } } }
op { type: "scale" inputs: "h" outputs: "h2" attrs { key: "scale" value { f: %s } } }
op { type: "elementwise_add" inputs: ["h", "h2"] outputs: "logits" }
""" % k + TAIL + """
train { loss: "avg" seed: 1 data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
""")


def gradcheck(net):
    r = subprocess.run([PR, "gradcheck", net, "--rows", "8", "--elements", "0"], capture_output=True, text=True)
    m = re.search(r"^worst: (\S+): analytic (\S+), numeric (\S+), relative error (\S+) \(tolerance 1e-06; "
                  r"differences up to (\S+), the loss's rounding over 2h, count as 0\)$", r.stdout, re.M)
    assert m, r.stdout + r.stderr
    print(net, r.returncode, m.group(0))
    return r.returncode, m.group(1), float(m.group(4)), r.stdout


rc, _, err, out = gradcheck("zero.pbtxt")
assert rc == 0 and err == 0, out
rc, var, err, out = gradcheck("half.pbtxt")
assert rc == 1 and var.startswith("w1[") and abs(err - 0.5) < 1e-6, out
assert "FAILED: the gradient of w1 does not match finite differences" in out, out
rc, var, err, out = gradcheck("slight.pbtxt")
assert rc == 1 and var.startswith("w1[") and 5e-6 < err < 2e-5, out
print("ok")

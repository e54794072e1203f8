# gradcheck_lstm.py — the LSTM cell of netdescs/fashion_lstm.pbtxt, shrunk to
# hidden size 3 over 4 steps of 2 pixels (the shipped text with its sizes
# replaced, so the cell checked is the one shipped), passes `paddle-run
# gradcheck` in float64 on every parameter element: the gradients the
# recurrent op carries back through both states (h and c) match finite
# differences. The same net with the path through c_prev cut (f * c_prev
# declared no_gradient) fails, so the check does see the cell state.
import os, re, subprocess, sys
import numpy as np

PR, ROOT = os.environ["PR"], os.environ["ROOT"]
text = open(os.path.join(ROOT, "netdescs", "fashion_lstm.pbtxt")).read()
assert text.count("[-1, 28, 28]") == 1 and "128" in text
text = text.replace("[-1, 28, 28]", "[-1, 4, 2]").replace("128", "3")
text = re.sub(r"\ntrain \{.*", '\ntrain { loss: "avg_loss" seed: 1 data { var: "pixels" file: "x.npy" } '
              'data { var: "label" file: "y.npy" } }\n', text, flags=re.S)
open("tiny_lstm.pbtxt", "w").write(text)
cut = 'var { name: "c_prev" shape: [-1, 3] }'
assert text.count(cut) == 1
open("cut_lstm.pbtxt", "w").write(text.replace(cut, cut + '\n  var { name: "fc" no_gradient: true }'))
rng = np.random.default_rng(3)
np.save("x.npy", rng.integers(0, 256, (8, 4, 2)).astype(np.uint8))
np.save("y.npy", rng.integers(0, 10, (8, 1)).astype(np.int64))


def gradcheck(net):
    p = subprocess.run([PR, "gradcheck", net, "--rows", "8", "--elements", "0"], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


rc, out = gradcheck("tiny_lstm.pbtxt")
print(out, end="")
if rc != 0 or not re.search(r"^checked 10 parameters, 112 elements, in float64 on 8 rows$", out, re.M):
    sys.exit(f"FAIL: gradcheck of the shrunk fashion_lstm cell exited {rc}")
print("ok: the fashion_lstm cell (hidden 3, 4 steps) passes gradcheck in float64 on every element")
rc, out = gradcheck("cut_lstm.pbtxt")
print(out, end="")
if rc != 1 or "FAILED: the gradient of" not in out:
    sys.exit(f"FAIL: gradcheck with the path through c_prev cut exited {rc}, want 1")
print("ok: with f * c_prev declared no_gradient, gradcheck fails")

# Evaluation must not change training: the evaluation runner shares the
# training runner's scope, and its short last batch reshapes the shared
# temporaries; the training runner must infer its shapes again afterwards.
# fit_a_line, 3 epochs, evaluated on 37 rows (a short last batch of 5) and on
# 64 rows (none) and not at all: the same training losses, bit for bit.
set -eu
net="$ROOT/netdescs/fit_a_line.pbtxt"
"$PYTHON" -c "
import numpy as np
x = np.load('$ROOT/netdescs/data/fit_a_line_test_x.npy'); y = np.load('$ROOT/netdescs/data/fit_a_line_test_y.npy')
for n in (37, 64):
    np.save('x%d.npy' % n, x[:n]); np.save('y%d.npy' % n, y[:n])"
losses() { grep '"type":"step"' "$1" | sed 's/.*"avg_loss":\([^,]*\),.*/\1/'; }
"$PR" train "$net" --epochs 3 --log-every 4 --log none.jsonl 2>/dev/null
for n in 37 64; do
  "$PR" train "$net" --epochs 3 --log-every 4 --eval-data x=x$n.npy --eval-data y=y$n.npy --log e$n.jsonl 2>/dev/null
  [ "$(losses e$n.jsonl)" = "$(losses none.jsonl)" ] || {
    echo "training with $n evaluation rows logged other losses:"
    paste "e$n.jsonl" none.jsonl | head -n 12
    exit 1
  }
done
echo "training losses identical with and without evaluation ($(losses none.jsonl | wc -l) logged steps)"

# train_cnn.sh — netdescs/fashion_cnn.pbtxt (conv2d, pool2d, flatten,
# dropout) learns: 300 steps of batch 64 (19,200 images, a third of
# an epoch) with the learning rate decayed over those steps, then the first
# 2,000 test images (an .npy subset made here from the IDX file) are
# classified with at least ACC_MIN accuracy: this much reaches 0.861 (the
# full 5 epochs 92.1%, docs/training.md); a broken op stays far below.
# About 35 s on 2 cores.
# Skipped (exit 77) where dataset-fashion-mnist is not installed.
# Env: PR (the binary), ROOT (repo root), PYTHON. Writes only in cwd.
set -u
ACC_MIN=0.82
STEPS=300
FASHION=/usr/share/datasets/fashion-mnist
PYTHON=${PYTHON:-/usr/bin/python3}
fail() { echo "FAIL: $*"; exit 1; }

if [ ! -f "$FASHION/t10k-images-idx3-ubyte.gz" ] || [ ! -f "$FASHION/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: dataset-fashion-mnist not installed"
  exit 77
fi

# the first 2,000 test images and labels as .npy (uint8 [n, 28, 28], int64 [n, 1])
"$PYTHON" - "$FASHION" <<'EOF' || fail "making the test subset"
import gzip, sys
import numpy as np
d, n = sys.argv[1], 2000
with gzip.open(d + "/t10k-images-idx3-ubyte.gz") as f:
    x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:n]
with gzip.open(d + "/t10k-labels-idx1-ubyte.gz") as f:
    y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
np.save("test_x.npy", x)
np.save("test_y.npy", y.astype(np.int64).reshape(-1, 1))
EOF

"$PR" train "$ROOT/netdescs/fashion_cnn.pbtxt" --iterations "$STEPS" \
  --set train.optimizer.schedule.decay_steps="$STEPS" --set train.log_every=100 \
  --eval-data pixels=test_x.npy --eval-data label=test_y.npy >train.out 2>&1
rc=$?
cat train.out
[ $rc -eq 0 ] || fail "paddle-run train netdescs/fashion_cnn.pbtxt --iterations $STEPS exited $rc"
# the closing line: finished: 300 steps in 32.2 s eval_avg_loss 0.3880 eval_acc 0.8610
acc=$(sed -n 's/^finished: .* eval_acc \([^ ]*\).*/\1/p' train.out | tail -n 1)
[ -n "$acc" ] || fail "no eval_acc on the closing line"
awk -v a="$acc" -v m="$ACC_MIN" 'BEGIN { exit !(a + 0 == a && a >= m) }' ||
  fail "test accuracy after $STEPS steps: $acc, want >= $ACC_MIN"
echo "ok: fashion_cnn after $STEPS steps: test accuracy $acc on 2000 images (>= $ACC_MIN)"

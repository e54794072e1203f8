# A label outside [0, C) fails `train` on the GPU as on the CPU: the same
# exit code and the same message (op, label, row, the data file's row) for
# softmax_with_cross_entropy, cross_entropy and accuracy, with two bad
# labels in the batch (the first row's is reported) and a negative one.
# The CPU half runs everywhere; the GPU half where a GPU is.
set -e
# the labels are cast from float data inside the net: labels read straight
# from a file are checked by `train` before the first step, so these reach
# the kernels
net() { # NAME C: fc to C classes, its loss by NAME's op, an accuracy
  case $1 in
  swce) loss='op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["p", "loss"] }' ;;
  ce) loss='op { type: "softmax" inputs: "logits" outputs: "p" }
op { type: "cross_entropy" inputs: ["p", "y"] outputs: "loss" }' ;;
  esac
  cat <<NET
name: "bad_labels"
var { name: "x" shape: [-1, 4] }
var { name: "yf" shape: [-1, 1] }
var { name: "zf" shape: [-1, 1] }
op { type: "cast" inputs: "yf" outputs: "y" attrs { key: "dtype" value { s: "int64" } } }
op { type: "cast" inputs: "zf" outputs: "z" attrs { key: "dtype" value { s: "int64" } } }
op { type: "fc" inputs: ["x", "w", "b"] outputs: "logits" attrs { key: "size" value { i: $2 } } }
$loss
op { type: "mean" inputs: "loss" outputs: "avg_loss" }
op { type: "accuracy" inputs: ["p", "z"] outputs: ["acc", "correct", "total"] }
train { loss: "avg_loss" batch_size: 10 }
NET
}
net swce 3 >swce.pbtxt
net ce 3 >ce.pbtxt
"$PYTHON" - <<'PY'
import numpy as np
np.save("x.npy", (np.arange(40, dtype=np.float32).reshape(10, 4) / 40))
def f(name, v):
    np.save(name, np.array(v, dtype=np.float32).reshape(10, 1))
f("good.npy", [0, 1, 2, 0, 1, 2, 2, 0, 0, 1])
f("bad.npy", [0, 1, 2, 0, 1, 5, 2, 0, 3, 1])  # two bad rows: the first (5) is reported
f("neg.npy", [0, 1, 2, 0, 1, 2, 2, -1, 0, 1])
PY
# NAME NET Y Z: one step over all 10 rows, unshuffled (the batch is the file)
runs="swce:swce:bad:good swce_neg:swce:neg:good ce:ce:bad:good ce_neg:ce:neg:good acc:ce:good:bad"
train() { # NAME DEVICE
  spec=$(printf '%s\n' $runs | grep "^$1:")
  set -- "$1" "$2" $(echo "$spec" | tr ':' ' ')
  set +e
  "$PR" train "$4.pbtxt" --data x=x.npy --data yf="$5.npy" --data zf="$6.npy" --iterations 1 --batch-size 10 \
    --no-shuffle --device "$2" >/dev/null 2>"$1.$2.err"
  echo $? >"$1.$2.rc"
  set -e
}
names="swce swce_neg ce ce_neg acc"
for n in $names; do
  train $n cpu
  [ "$(cat $n.cpu.rc)" != 0 ] || { echo "$n: the CPU run did not fail"; exit 1; }
  grep -q 'is out of range \[0, 3)' $n.cpu.err || { cat $n.cpu.err; echo "$n: not the label error"; exit 1; }
  grep 'out of range' $n.cpu.err
done
grep -q 'softmax_with_cross_entropy": label 5 at row 5 ' swce.cpu.err
grep -q 'cross_entropy": label -1 at row 7 ' ce_neg.cpu.err
grep -q 'accuracy": label 5 at row 5 ' acc.cpu.err
set +e # gpu_env runs its probe unguarded
. "$ROOT/test/gpu/gpu_env"
set -e
for n in $names; do
  train $n gpu
  [ "$(cat $n.gpu.rc)" = "$(cat $n.cpu.rc)" ] || { cat $n.gpu.err; echo "$n: exit $(cat $n.gpu.rc) on the GPU"; exit 1; }
  # the message, without what differs by device (progress, timings)
  a=$(grep 'out of range' $n.cpu.err) b=$(grep 'out of range' $n.gpu.err || true)
  [ "$a" = "$b" ] || { cat $n.gpu.err; echo "$n: the GPU's message differs from the CPU's: $a"; exit 1; }
done
echo "the GPU reports each bad label as the CPU does"

# An id or a sequence length out of range fails `train` on the GPU as on
# the CPU: the same exit code and the same message (op, input, row, value)
# for embedding (an id beyond the table, a negative one), sequence_pool,
# sequence_last and sequence_mask (a length beyond the steps, a negative
# one), the recurrent op's lengths and the fused lstm and gru ops', and a
# slice's start read at run time whose window leaves its dim (the mean
# of len_bad, 4.3, cast to 4, for a window of 2 in a dim of 4). The
# ids and lengths are cast from float data inside the net, so the
# load-time checks do not see them and the kernels must (the device fault
# record, lib/gpu/fault.h). The CPU half runs everywhere; the GPU half
# where a GPU is.
set -e
head='var { name: "x" shape: [-1, 4, 3] }
op { type: "cast" inputs: "f" outputs: "n" attrs { key: "dtype" value { s: "int64" } } }'
tail='op { type: "mean" inputs: "o" outputs: "loss" }
train { loss: "loss" batch_size: 6 optimizer { type: "sgd" lr: 0.1 } }'
net() { # NAME BODY [F's row shape]: F float data, cast to the int64 N
  printf 'name: "%s"\nvar { name: "f" shape: [-1%s] }\n%s\n' "$1" "${3:+, $3}" "$head"
  printf 'var { name: "w" shape: [3, 3] kind: PARAM }\n'
  printf 'op { type: "mul" inputs: ["x", "w"] outputs: "xw" attrs { key: "x_num_col_dims" value { i: 2 } } }\n'
  printf '%s\n%s\n' "$2" "$tail"
}
net pool 'op { type: "sequence_pool" inputs: ["xw", "n"] outputs: "o" }' >pool.pbtxt
net last 'op { type: "sequence_last" inputs: ["xw", "n"] outputs: "o" }' >last.pbtxt
net mask 'op { type: "sequence_mask" inputs: ["n", "xw"] outputs: "m" }
op { type: "reshape" inputs: "m" outputs: "m3" attrs { key: "shape" value { ints: [-1, 4, 1] } } }
op { type: "broadcast_mul" inputs: ["xw", "m3"] outputs: "o" }' >mask.pbtxt
net emb 'var { name: "emb.w" shape: [5, 3] kind: PARAM }
op { type: "embedding" inputs: ["n", "emb.w"] outputs: "e" }
op { type: "elementwise_add" inputs: ["e", "e"] outputs: "o" }' 2 >emb.pbtxt
net rec 'block {
  name: "cell"
  var { name: "h_prev" shape: [-1, 2] }
  op { type: "concat" inputs: ["x_t", "h_prev"] outputs: "xh" attrs { key: "axis" value { i: 1 } } }
  op { type: "fc" inputs: ["xh", "cell.w", "cell.b"] outputs: "a" attrs { key: "size" value { i: 2 } } }
  op { type: "tanh" inputs: "a" outputs: "h" }
}
op { type: "recurrent" inputs: ["xw", "", "n"] outputs: ["o", "h_last"]
     attrs { key: "step_block" value { block: "cell" } }
     attrs { key: "inputs" value { strings: "x_t" } }
     attrs { key: "prev_states" value { strings: "h_prev" } }
     attrs { key: "states" value { strings: "h" } }
     attrs { key: "outputs" value { strings: "h" } } }' >rec.pbtxt
net lstm 'var { name: "l.w" kind: PARAM }
var { name: "l.r" kind: PARAM }
op { type: "lstm" inputs: ["xw", "l.w", "l.r", "", "n"] outputs: ["o"] attrs { key: "hidden_size" value { i: 2 } } }' >lstm.pbtxt
net gru 'var { name: "g.w" kind: PARAM }
var { name: "g.r" kind: PARAM }
op { type: "gru" inputs: ["xw", "g.w", "g.r", "", "n"] outputs: ["o"]
     attrs { key: "hidden_size" value { i: 2 } } attrs { key: "direction" value { s: "reverse" } } }' >gru.pbtxt
net slc 'op { type: "mean" inputs: "f" outputs: "fm" }
op { type: "cast" inputs: "fm" outputs: "s0" attrs { key: "dtype" value { s: "int64" } } }
op { type: "slice" inputs: ["xw", "s0"] outputs: "o" attrs { key: "axes" value { ints: [1] } }
     attrs { key: "sizes" value { ints: [2] } } }' >slc.pbtxt
"$PYTHON" - <<'PY'
import numpy as np
np.save("x.npy", (np.arange(72, dtype=np.float32).reshape(6, 4, 3) / 72))
def f(name, v):
    np.save(name, np.array(v, dtype=np.float32))
f("len_bad.npy", [1, 4, 2, 7, 3, 9])     # rows 3 and 5 beyond the 4 steps: row 3 is reported
f("len_neg.npy", [1, 4, 2, 3, -1, 2])
f("id_bad.npy", np.reshape([0, 1, 2, 3, 4, 0, 1, 8, 2, 3, 6, 4], (6, 2)))  # 8 (row 3) is reported
f("id_neg.npy", np.reshape([0, 1, 2, 3, 4, 0, 1, 2, -1, 3, 0, 4], (6, 2)))
PY
# NAME|NET|LENGTHS OR IDS|what the message says
runs='pool|pool|len_bad|row 3 is 7
pool_neg|pool|len_neg|row 4 is -1
last|last|len_bad|row 3 is 7
mask|mask|len_bad|row 3 is 7
rec|rec|len_bad|row 3 is 7
rec_neg|rec|len_neg|row 4 is -1
lstm|lstm|len_bad|row 3 is 7
lstm_neg|lstm|len_neg|row 4 is -1
gru|gru|len_bad|row 3 is 7
emb|emb|id_bad|id 8 is outside
emb_neg|emb|id_neg|id -1 is outside
slc|slc|len_bad|entry 0 is 4: a window of 2 along dim 1'
names=$(printf '%s\n' "$runs" | cut -d'|' -f1)
field() { printf '%s\n' "$runs" | grep "^$1|" | cut -d'|' -f"$2"; }
want() { field "$1" 4; }
train() { # NAME DEVICE
  set +e
  "$PR" train "$(field "$1" 2).pbtxt" --data x=x.npy --data f="$(field "$1" 3).npy" --iterations 1 --batch-size 6 \
    --no-shuffle --device "$2" >/dev/null 2>"$1.$2.err"
  echo $? >"$1.$2.rc"
  set -e
}
for n in $names; do
  train "$n" cpu
  [ "$(cat "$n.cpu.rc")" = 2 ] || { cat "$n.cpu.err"; echo "$n: the CPU run did not fail with exit 2"; exit 1; }
  grep -q "$(want "$n")" "$n.cpu.err" || { cat "$n.cpu.err"; echo "$n: not the message: $(want "$n")"; exit 1; }
  grep "$(want "$n")" "$n.cpu.err"
done
set +e # gpu_env runs its probe unguarded
. "$ROOT/test/gpu/gpu_env"
set -e
for n in $names; do
  train "$n" gpu
  [ "$(cat "$n.gpu.rc")" = "$(cat "$n.cpu.rc")" ] || { cat "$n.gpu.err"; echo "$n: exit $(cat "$n.gpu.rc") on the GPU"; exit 1; }
  a=$(grep "$(want "$n")" "$n.cpu.err") b=$(grep "$(want "$n")" "$n.gpu.err" || true)
  [ "$a" = "$b" ] || { cat "$n.gpu.err"; echo "$n: the GPU's message differs from the CPU's: $a"; exit 1; }
done
echo "the GPU reports each bad id and length as the CPU does"

# netdescs.sh — the shipped example networks in netdescs/ run as shipped:
#   1. `paddle-run check` passes on every netdescs/*.pbtxt;
#   2. netdescs/gen_data.c writes the same bytes as ever, and netdescs/data/
#      (made by `make data`, which `make test` runs) holds exactly them;
#   3. fit_a_line.pbtxt trains with no flags at all — run by absolute path from
#      this (empty, temporary) directory, so its relative data paths must
#      resolve beside the NetDesc — and its final training and test losses
#      come out below LOSS_MAX (they reach about 0.0105 and 0.0116; the noise
#      floor is 0.01, the start about 11);
#   4. each net reading Fashion-MNIST trains for 20 iterations (skipped, exit
#      77, where dataset-fashion-mnist is not installed);
#   5. char_lm.pbtxt trains 30 iterations on Debian's fortunes with a falling
#      loss, and `generate` from it gives the same bytes for the same seed.
# Env: PR (the binary), ROOT (repo root), BUILD (build dir). Writes only in cwd.
set -u
LOSS_MAX=0.05
FASHION=/usr/share/datasets/fashion-mnist
fail() { echo "FAIL: $*"; exit 1; }

# ---- 1. check ----------------------------------------------------------------
n=0
for net in "$ROOT"/netdescs/*.pbtxt; do
  [ -f "$net" ] || continue
  name=$(basename "$net")
  "$PR" check "$net" >check.out 2>&1 || { cat check.out; fail "paddle-run check netdescs/$name"; }
  echo "ok: paddle-run check netdescs/$name"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no netdescs/*.pbtxt found"

# ---- 2. the generated data: identical bytes on every build -------------------
mkdir -p gen
if [ -x "$BUILD/gen_data" ]; then
  "$BUILD/gen_data" gen || fail "gen_data gen"
  # the bytes netdescs/gen_data.c has always written; change these only when
  # the data set is changed on purpose (and update fit_a_line.pbtxt's numbers)
  cat >want.md5 <<'EOF'
452e6496cd68ebc4d8ac4d5cd853afe8  fit_a_line_train_x.npy
7879d83bf6883a203aa5d0af0135586d  fit_a_line_train_y.npy
0911dfb90b4156076e65a8863be7bc32  fit_a_line_test_x.npy
f39dc49002bdd558d91bb597e5a85b8b  fit_a_line_test_y.npy
EOF
  (cd gen && md5sum -c --quiet ../want.md5) || fail "gen_data's output changed (checksums above)"
  echo "ok: gen_data writes the expected bytes"
  for f in gen/*.npy; do
    b=$(basename "$f")
    [ -f "$ROOT/netdescs/data/$b" ] || fail "netdescs/data/$b missing: run \`make data\`"
    cmp -s "$f" "$ROOT/netdescs/data/$b" || fail "netdescs/data/$b is stale: run \`make data\`"
  done
  echo "ok: netdescs/data/ is what gen_data writes"
else
  echo "note: $BUILD/gen_data not built (\`make data\`); skipping the byte check"
fi

# ---- 3. fit_a_line trains with no flags --------------------------------------
for f in train_x train_y test_x test_y; do
  [ -f "$ROOT/netdescs/data/fit_a_line_$f.npy" ] || fail "netdescs/data/fit_a_line_$f.npy missing: run \`make data\`"
done
"$PR" train "$ROOT/netdescs/fit_a_line.pbtxt" >fit.out 2>&1
rc=$?
cat fit.out
[ $rc -eq 0 ] || fail "paddle-run train netdescs/fit_a_line.pbtxt (no flags) exited $rc"
# plain log lines (stderr is not a terminal):
#   epoch 10 step 160/160 avg_loss 0.0105 lr 0.1 ... ex/s
#   epoch 10 done: step 160, 0.0 s eval_avg_loss 0.0116
train_loss=$(sed -n 's/^epoch [0-9]* step [0-9]*\/[0-9]* avg_loss \([^ ]*\) .*/\1/p' fit.out | tail -n 1)
eval_loss=$(sed -n 's/^epoch [0-9]* done: .* eval_avg_loss \([^ ]*\).*/\1/p' fit.out | tail -n 1)
[ -n "$train_loss" ] || fail "fit_a_line: no training loss in the log"
[ -n "$eval_loss" ] || fail "fit_a_line: no eval_avg_loss in the log (are the eval_data bindings read?)"
awk -v a="$train_loss" -v m="$LOSS_MAX" 'BEGIN { exit !(a + 0 == a && a < m) }' ||
  fail "fit_a_line: final training loss $train_loss, want < $LOSS_MAX"
awk -v a="$eval_loss" -v m="$LOSS_MAX" 'BEGIN { exit !(a + 0 == a && a < m) }' ||
  fail "fit_a_line: final eval_avg_loss $eval_loss, want < $LOSS_MAX"
echo "ok: fit_a_line trains with no flags from another directory: loss $train_loss, eval_avg_loss $eval_loss (< $LOSS_MAX)"

# ---- 4. the Fashion-MNIST nets, briefly ---------------------------------------
nf=0
for net in "$ROOT"/netdescs/*.pbtxt; do
  grep -q "$FASHION" "$net" || continue
  nf=$((nf + 1))
  [ -d "$FASHION" ] || continue
  name=$(basename "$net")
  "$PR" train "$net" --iterations 20 >train.out 2>&1 ||
    { cat train.out; fail "paddle-run train netdescs/$name --iterations 20"; }
  grep -q '^epoch 1 step 20/20 avg_loss ' train.out || { cat train.out; fail "netdescs/$name: no step 20 log line"; }
  echo "ok: netdescs/$name trains 20 iterations: $(grep '^epoch 1 step 20/20' train.out)"
done
# ---- 5. the char LM on Debian's fortunes, briefly ---------------------------
FORTUNES=/usr/share/games/fortunes
if [ -f "$FORTUNES/fortunes.u8" ]; then
  "$PR" train "$ROOT/netdescs/char_lm.pbtxt" --iterations 30 --log-every 10 --save clm >clm.out 2>&1 ||
    { cat clm.out; fail "paddle-run train netdescs/char_lm.pbtxt --iterations 30"; }
  first=$(sed -n 's/^epoch 1 step 10\/30 avg_loss \([^ ]*\) .*/\1/p' clm.out)
  last=$(sed -n 's/^epoch 1 step 30\/30 avg_loss \([^ ]*\) .*/\1/p' clm.out)
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(a + 0 == a && b + 0 == b && b < a && b < 3.5) }' ||
    { cat clm.out; fail "char_lm: loss $first at step 10, $last at step 30: want falling, below 3.5"; }
  echo "ok: netdescs/char_lm.pbtxt trains 30 iterations: loss $first at step 10, $last at step 30"
  gen() { "$PR" generate "$ROOT/netdescs/char_lm.pbtxt" --params clm --prime "The " --length 60 --seed "$1"; }
  gen 7 >g1.out && gen 7 >g2.out && gen 8 >g3.out || fail "paddle-run generate netdescs/char_lm.pbtxt"
  [ "$(wc -c <g1.out)" -eq 64 ] || fail "generate --length 60 after a 4-byte prime wrote $(wc -c <g1.out) bytes"
  cmp -s g1.out g2.out || fail "generate: the same seed gave different text"
  cmp -s g1.out g3.out && fail "generate: seeds 7 and 8 gave the same text"
  echo "ok: generate from char_lm: 64 bytes, the same for one seed, other for another"
else
  echo "note: fortunes not installed; char_lm not trained"
fi

if [ "$nf" -gt 0 ] && [ ! -d "$FASHION" ]; then
  echo "skipped: dataset-fashion-mnist not installed"
  exit 77
fi
exit 0

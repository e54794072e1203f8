# Every op with a GPU kernel, forward, backward and update, against its CPU
# kernel on the same random inputs (test/tools/gpu_parity.c: relative error
# <= 1e-5, NaN never passes, outputs poisoned before the GPU run), over the
# shipped nets and test/gpu/nets/; an op with a GPU kernel that none of them
# runs fails.
. "$ROOT/test/gpu/gpu_env"
set -e
# recurrent has no GPU kernel yet, so the nets that run it (fashion_lstm) are
# CPU-only and left out
nets=""
for n in "$ROOT"/netdescs/*.pbtxt; do
  grep -q 'type: "recurrent"' "$n" || nets="$nets $n"
done
[ -d "$ROOT/test/gpu/nets" ] && nets="$nets $ROOT/test/gpu/nets/*.pbtxt"
# shellcheck disable=SC2086
"$BUILD/test/gpu_parity" --tol 1e-5 --batch 8 $nets
# a batch that is not a multiple of any block size
# shellcheck disable=SC2086
"$BUILD/test/gpu_parity" --tol 1e-5 --batch 37 --seed 11 $nets

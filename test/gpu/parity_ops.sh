# Every op with a GPU kernel, forward, backward and update, against its CPU
# kernel on the same random inputs (test/tools/gpu_parity.c: relative error
# <= 1e-5, NaN never passes, outputs poisoned before the GPU run), over the
# shipped nets and test/gpu/nets/; an op with a GPU kernel that none of them
# runs fails.
. "$ROOT/test/gpu/gpu_env"
set -e
nets="$ROOT/netdescs/*.pbtxt"
[ -d "$ROOT/test/gpu/nets" ] && nets="$nets $ROOT/test/gpu/nets/*.pbtxt"
# shellcheck disable=SC2086
"$BUILD/test/gpu_parity" --tol 1e-5 --batch 8 $nets
# a batch that is not a multiple of any block size
# shellcheck disable=SC2086
"$BUILD/test/gpu_parity" --tol 1e-5 --batch 37 --seed 11 $nets

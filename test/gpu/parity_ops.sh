# Every op with a GPU kernel, forward, backward and update, against its CPU
# kernel on the same random inputs (test/tools/gpu_parity.c: per element
# |g - c| <= 1e-5 max|c of the tensor| + 1e-5 |c| + 1e-7, the worst element
# reported, NaN never passes, outputs poisoned before every GPU run) over
# four steps (Adam's later steps, batch_norm's running statistics, a
# captured and a replayed CUDA graph, a short last batch) and an evaluation
# pass, over the shipped nets and test/gpu/nets/; an op with a GPU kernel
# that none of them runs fails, and so does a run that replays no graph.
# Then the paths that need sizes: batch 1 (cos_sim's one-row Y with no
# gradient), conv2d's multi-chunk path, more than 65,535 rows and grids over
# 2M elements (test/gpu/nets/large/).
. "$ROOT/test/gpu/gpu_env"
set -e
# every shipped net and the cover nets: each op of each has a GPU kernel
nets="$ROOT/netdescs/*.pbtxt $ROOT/test/gpu/nets/*.pbtxt"
# shellcheck disable=SC2086
"$BUILD/test/gpu_parity" --batch 8 $nets
# a batch that is not a multiple of any block size
# shellcheck disable=SC2086
"$BUILD/test/gpu_parity" --batch 37 --seed 11 $nets
# one row: every [N, D] against [1, D] broadcast is then the same shape
"$BUILD/test/gpu_parity" --no-coverage --batch 1 --steps 2 "$ROOT"/test/gpu/nets/*.pbtxt
"$BUILD/test/gpu_parity" --no-coverage --batch 8 "$ROOT/test/gpu/nets/large/conv_chunks.pbtxt"
"$BUILD/test/gpu_parity" --no-coverage --batch 140000 --steps 3 "$ROOT/test/gpu/nets/large/rows.pbtxt"

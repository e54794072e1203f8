# A checkpoint written on the GPU resumes on the CPU and one written on the
# CPU resumes on the GPU: 60 + 60 steps across places end with the loss of
# 120 uninterrupted CPU steps (relative 1e-4), and the saved parameters are
# plain .npy files either way.
. "$ROOT/test/gpu/gpu_env"
set -e
net="$ROOT/netdescs/fashion_mlp.pbtxt"
common="--seed 5 --no-shuffle --log-every 60"
# shellcheck disable=SC2086
"$PR" train "$net" $common --iterations 120 --device cpu --log full.jsonl 2>/dev/null
# shellcheck disable=SC2086
"$PR" train "$net" $common --iterations 60 --device gpu --save g 2>/dev/null
# shellcheck disable=SC2086
"$PR" train "$net" $common --iterations 120 --device cpu --resume g --log g2c.jsonl 2>/dev/null
# shellcheck disable=SC2086
"$PR" train "$net" $common --iterations 60 --device cpu --save c 2>/dev/null
# shellcheck disable=SC2086
"$PR" train "$net" $common --iterations 120 --device gpu --resume c --log c2g.jsonl 2>/dev/null
"$PYTHON" - <<'PY'
import json
def last(p):
    return [json.loads(l) for l in open(p) if '"type":"step"' in l][-1]
f = last("full.jsonl")
for p in ("g2c.jsonl", "c2g.jsonl"):
    x = last(p)
    assert x["step"] == f["step"] == 120, (p, x["step"])
    d = abs(x["avg_loss"] - f["avg_loss"]) / abs(f["avg_loss"])
    assert d <= 1e-4, (p, x["avg_loss"], f["avg_loss"], d)
    print(p, "ends at loss", x["avg_loss"], "vs", f["avg_loss"])
PY
# A checkpoint saved mid-run (the next step already staged on the GPU) holds
# the @step and @lr of the step saved, byte for byte as a CPU run's; with
# Adam, whose @step is read by the update.
# shellcheck disable=SC2086
"$PR" train "$net" $common --optimizer adam --iterations 60 --save-every 30 --device cpu --save ca 2>/dev/null
# shellcheck disable=SC2086
"$PR" train "$net" $common --optimizer adam --iterations 60 --save-every 30 --device gpu --save ga 2>/dev/null
for v in @step @lr; do
  cmp "ca/step-00000030/$v.npy" "ga/step-00000030/$v.npy"
done
echo "mid-run checkpoints: @step and @lr equal"

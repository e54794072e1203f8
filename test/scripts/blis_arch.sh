# BLIS's kernel set (lib/blisarch.c): `--version` names it and how it was
# chosen; a BLIS_ARCH_TYPE the user set is obeyed; on an Intel CPU with
# AVX-512 the FMA units were counted (and two of them mean the 'skx'
# kernels); training with BLIS's AVX2 kernels ('haswell', forced) and with
# the kernels chosen here gives the same losses up to float rounding.
set -u
fail() { echo "FAIL: $*"; exit 1; }

line=$("$PR" --version | grep '^blas: ') || fail "--version has no blas line: $("$PR" --version)"
echo "$line"
echo "$line" | grep -Eq "^blas: BLIS [0-9.]+, kernels '[a-z0-9_]+' \(.+\)$" || fail "blas line: $line"

if [ "$(uname -m)" != x86_64 ]; then
  echo "skipped: the x86-64 kernel sets (not an x86-64 machine)"
  exit 0
fi

# BLIS_ARCH_HASWELL in BLIS's arch_t (the fourth entry: skx, knl, knc, haswell)
forced=$(BLIS_ARCH_TYPE=3 "$PR" --version | grep '^blas: ')
[ "$forced" = "blas: BLIS $(echo "$line" | sed -E 's/^blas: BLIS ([0-9.]+),.*/\1/'), kernels 'haswell' (BLIS_ARCH_TYPE from the environment)" ] ||
  fail "BLIS_ARCH_TYPE=3: $forced"

flags=$(grep -m1 '^flags' /proc/cpuinfo)
intel512=0
if grep -q -m1 'GenuineIntel' /proc/cpuinfo; then
  intel512=1
  for f in avx512f avx512dq avx512cd avx512bw avx512vl fma; do
    echo "$flags" | grep -qw "$f" || intel512=0
  done
fi
if [ $intel512 = 1 ]; then
  echo "$line" | grep -Eq "(two|one) AVX-512 FMA units? measured: 512-bit FMAs at [0-9.]+x the rate of 256-bit ones" ||
    fail "an Intel CPU with AVX-512, but no measurement: $line"
  if echo "$line" | grep -q 'two AVX-512'; then
    echo "$line" | grep -q "kernels 'skx'" || fail "two units measured, yet not skx: $line"
  fi
else
  echo "$line" | grep -q "(BLIS's own choice)" || fail "not an Intel CPU with AVX-512, yet: $line"
fi

# the first 5 steps with both kernel sets: losses equal up to float rounding
# (training amplifies it: by step 30 they differ by 1e-4)
net="$ROOT/netdescs/fashion_mlp.pbtxt"
for k in chosen haswell; do
  if [ $k = haswell ]; then
    BLIS_ARCH_TYPE=3 "$PR" train "$net" --iterations 5 --log-every 1 --threads 1 --log $k.jsonl >/dev/null 2>&1 ||
      fail "training with $k kernels"
  else
    "$PR" train "$net" --iterations 5 --log-every 1 --threads 1 --log $k.jsonl >/dev/null 2>&1 || fail "training with $k kernels"
  fi
done
python3 - <<'EOF' || fail "losses differ between the kernel sets"
import json
def losses(p):
    return [r["avg_loss"] for r in map(json.loads, open(p)) if r.get("type") == "step"]
a, b = losses("chosen.jsonl"), losses("haswell.jsonl")
assert len(a) == len(b) == 5, (a, b)
worst = max(abs(x - y) / abs(y) for x, y in zip(a, b))
print("losses at the logged steps:", a, "vs", b, "worst rel. diff %.1e" % worst)
assert worst < 1e-5, worst
EOF
echo ok

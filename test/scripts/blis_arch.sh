# BLIS's kernel set (lib/cpu/blisarch.c): `--version` names it and how it was
# chosen; a BLIS_ARCH_TYPE the user set is obeyed (a name, which BLIS 0.9
# reads as 0, is said to be one); on an Intel or AMD CPU with AVX-512 the
# FMA units were counted (AMD's Zen 4, at half width, keeps 'zen3'), and with two of them a net of large
# products runs the 'skx' kernels and a net of tiny ones BLIS's own choice
# (`time` says which); training with BLIS's AVX2 kernels ('haswell',
# forced) and with the kernels chosen here gives the same losses up to
# float rounding; conv2d's own use of the micro-kernel works with either set.
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

# a name is read by BLIS 0.9 as the number 0 ('skx'): said in the line
named=$(BLIS_ARCH_TYPE=zen3 "$PR" --version | grep '^blas: ')
echo "$named" | grep -q "BLIS_ARCH_TYPE=zen3 from the environment, which BLIS 0.9 reads as a number" ||
  fail "BLIS_ARCH_TYPE=zen3: $named"

flags=$(grep -m1 '^flags' /proc/cpuinfo)
intel512=0 amd512=0
if grep -q -m1 'GenuineIntel\|AuthenticAMD' /proc/cpuinfo; then
  intel512=1
  for f in avx512f avx512dq avx512cd avx512bw avx512vl fma; do
    echo "$flags" | grep -qw "$f" || intel512=0
  done
  if [ $intel512 = 1 ] && grep -q -m1 'AuthenticAMD' /proc/cpuinfo; then amd512=1; fi
fi
kernels() { "$PR" time "$1" --iterations 2 --threads 1 | grep '^BLIS kernels: '; }
big=$(kernels "$ROOT/netdescs/fashion_mlp.pbtxt") small=$(kernels "$ROOT/test/cli/data/tiny.pbtxt")
echo "fashion_mlp: $big"
echo "tiny: $small"
if [ $intel512 = 1 ]; then
  echo "$line" | grep -Eq "((two|one) AVX-512 FMA units?|AVX-512 at half width) measured:? \(?512-bit FMAs at [0-9.]+x the rate of 256-bit ones" ||
    fail "an Intel or AMD CPU with AVX-512, but no measurement: $line"
  if [ $amd512 = 1 ] && echo "$line" | grep -q 'half width'; then # Zen 4: BLIS's own 'zen3' stays
    echo "$line" | grep -q "kernels 'zen3' (BLIS's own choice; " || fail "AMD at half width, yet: $line"
  fi
  if echo "$line" | grep -q 'two AVX-512'; then
    echo "$line" | grep -q "kernels 'skx' (chosen by paddle-run; .*no net's sizes given)" || fail "two units, yet: $line"
    echo "$big" | grep -q "^BLIS kernels: 'skx' (chosen by paddle-run; .* MFLOP an op)$" || fail "fashion_mlp: $big"
    echo "$small" | grep -q "(BLIS's own choice kept for small products; " || fail "tiny: $small"
    echo "$small" | grep -vq "'skx'" || fail "tiny: $small"
  fi
else
  echo "$line" | grep -q "(BLIS's own choice)" || fail "not an Intel or AMD CPU with AVX-512, yet: $line"
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

# conv2d's packed forward calls BLIS's micro-kernel itself: with the AVX2
# kernels' tiles (6 x 16) as well as the AVX-512 ones' (32 x 12)
out=$(BLIS_ARCH_TYPE=3 "$BUILD/test/test_op_conv2d" 2>&1) || fail "test_op_conv2d with the haswell kernels: $out"
echo "test_op_conv2d with BLIS_ARCH_TYPE=3: passed"
echo ok

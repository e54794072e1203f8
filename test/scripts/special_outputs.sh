# special_outputs.sh — outputs that are not plain files (issue 18.3): a
# character device or FIFO is written through (never renamed over), a
# symlink is followed (the link stays), a FIFO whose reader leaves (a
# --fetch or a --log) gives an error (exit 1), not a SIGPIPE death. Never touches a system file: /dev/null
# is reached only through a symlink here, and is checked to be the same
# character device after.
# Env: PR (the binary), ROOT (repo root), PYTHON (with NumPy).
set -u
: "${PR:?PR must name the paddle-run binary}" "${ROOT:?ROOT must name the repository root}"
PYTHON=${PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

cp "$ROOT/test/bad/common/net.pbtxt" .
"$PYTHON" -c "
import numpy as np
rng = np.random.default_rng(1)
np.save('x.npy', rng.standard_normal((32, 4)).astype(np.float32))
np.save('y.npy', rng.integers(0, 2, (32, 1)).astype(np.int64))
np.save('big.npy', rng.standard_normal((100000, 4)).astype(np.float32))" || exit 1
"$PR" train net.pbtxt --save ckpt >setup.log 2>&1 || {
  cat setup.log
  exit 1
}
infer() { timeout 60 "$PR" infer net.pbtxt --params ckpt --data x=x.npy "$@"; }
infer --fetch prob=ref.npy || exit 1

# 1. a symlink to /dev/null: written through; the link and /dev/null stay
devnull_before=$(stat -c '%F %t:%T %a' /dev/null)
ln -s /dev/null sink
infer --fetch prob=sink >out.log 2>&1 || fail "--fetch into a symlink to /dev/null: exit $?: $(cat out.log)"
if [ ! -L sink ] || [ "$(readlink sink)" != /dev/null ]; then fail "the symlink to /dev/null was replaced"; fi
[ "$(stat -c '%F %t:%T %a' /dev/null)" = "$devnull_before" ] || fail "/dev/null changed: $(stat -c '%F %t:%T %a' /dev/null)"
timeout 60 "$PR" train net.pbtxt --log sink >out.log 2>&1 || fail "--log into a symlink to /dev/null: exit $?"
[ -L sink ] || fail "--log replaced the symlink to /dev/null"

# 2. a FIFO: its reader gets exactly the file a regular output would hold
mkfifo pipe
timeout 60 cat pipe >got.npy &
reader=$!
infer --fetch prob=pipe >out.log 2>&1 || fail "--fetch into a FIFO: exit $?: $(cat out.log)"
wait $reader || fail "the FIFO's reader got nothing (exit $?)"
cmp -s got.npy ref.npy || fail "the FIFO's reader got other bytes than ref.npy"
[ -p pipe ] || fail "the FIFO was replaced"

# 3. a FIFO whose reader leaves after 10 bytes (the output, 800 KB, is more
# than the pipe holds): exit 1 and a message, not a death by SIGPIPE
mkfifo short
timeout 60 "$PYTHON" -c "f = open('short', 'rb'); f.read(10); f.close()" &
reader=$!
timeout 60 "$PR" infer net.pbtxt --params ckpt --data x=big.npy --fetch prob=short >out.log 2>&1
rc=$?
wait $reader
[ $rc -eq 1 ] || fail "--fetch into a FIFO whose reader left: expected exit 1, got $rc: $(cat out.log)"
grep -qF "short: cannot write: Broken pipe" out.log || fail "expected \"short: cannot write: Broken pipe\" in: $(cat out.log)"
[ -p short ] || fail "the FIFO whose reader left was replaced"

# 3b. a --log FIFO whose reader leaves after the first record: the run ends
# with exit 1 and the log's message, not a death by SIGPIPE
mkfifo logpipe
timeout 60 "$PYTHON" -c "f = open('logpipe', 'rb'); f.readline(); f.close()" &
reader=$!
timeout 60 "$PR" train net.pbtxt --iterations 2000 --log-every 1 --log logpipe >out.log 2>&1
rc=$?
wait $reader
[ $rc -eq 1 ] || fail "--log into a FIFO whose reader left: expected exit 1, got $rc: $(tail -n 3 out.log)"
grep -qF -- "--log logpipe: cannot write the log: Broken pipe" out.log ||
  fail "expected \"--log logpipe: cannot write the log: Broken pipe\" in: $(tail -n 3 out.log)"

# 4. a symlink to a regular file in another directory: that file is
# replaced (atomically, beside itself), the link stays
mkdir d
echo old >d/real.npy
ln -s d/real.npy link.npy
infer --fetch prob=link.npy >out.log 2>&1 || fail "--fetch into a symlink to a file: exit $?: $(cat out.log)"
if [ ! -L link.npy ] || [ "$(readlink link.npy)" != d/real.npy ]; then fail "the symlink to a file was replaced"; fi
cmp -s d/real.npy ref.npy || fail "the file behind the symlink does not hold the output"
[ -z "$(find . -name '.*tmp-*')" ] || fail "temp files left: $(find . -name '.*tmp-*')"

if [ $fails -ne 0 ]; then
  echo "special outputs: $fails failed"
  exit 1
fi
echo "special outputs: /dev/null through a symlink, a FIFO, a FIFO whose reader leaves, a symlink to a file: all as expected"
exit 0

# stdout_full.sh — a command whose standard output cannot be written (a full
# disk, /dev/full) fails with exit 1 and says so, never exit 0 with its
# output lost. Every command that prints to stdout, on /dev/full.
set -u
: "${PR:?}" "${ROOT:?}"
[ -w /dev/full ] || { echo "skipped: no /dev/full"; exit 77; }
net=$ROOT/test/cli/data/tiny.pbtxt
fails=0
check() { # WANT_MESSAGE ARGS...: run ARGS with stdout on /dev/full
  want=$1
  shift
  err=$("$PR" "$@" 2>&1 >/dev/full)
  rc=$?
  if [ $rc -ne 1 ] || [ "$(printf '%s\n' "$err" | tail -n 1)" != "paddle-run: cannot write standard output: $want" ]; then
    echo "FAIL: paddle-run $* >/dev/full: exit $rc, said: $err"
    fails=$((fails + 1))
  else
    echo "ok: paddle-run $* >/dev/full: exit 1"
  fi
}
full="No space left on device"
check "$full" --help
check "$full" --version
check "$full" ops
check "$full" ops fc
check "$full" ops --markdown
check "$full" train --help
check "$full" check "$net"
check "$full" time "$net" --iterations 2
check "$full" time "$net" --iterations 2 --json
"${PYTHON:-/usr/bin/python3}" -c 'import numpy as np; np.save("x.npy", np.ones((4, 4), np.float32)); np.save("y.npy", np.zeros((4, 1), np.int64))'
"$PR" train "$net" --iterations 0 --save p --data x=x.npy --data y=y.npy >/dev/null 2>&1 || { echo "FAIL: train --iterations 0 --save p"; exit 1; }
check "$full" infer "$net" --params p --data x=x.npy --fetch h
check "$full" desc "$net"
check "$full" fmt "$net"
[ $fails -eq 0 ]

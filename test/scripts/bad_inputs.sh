# bad_inputs.sh — runs the bad-input catalogue, test/bad/*/case: every case
# is one command on one bad input (NetDesc text, a flag, a data file, a
# checkpoint, an output path) and states the exit code and what the message
# must say. For every case it also checks what holds for all of them:
#   - no crash, no sanitizer report, no hang (a case gets $CASE_TIMEOUT s,
#     or what its `timeout:` line says);
#   - the work directory is exactly as the command found it — no new file or
#     directory (no partial --fetch output, no new checkpoint, no empty
#     --save directory), nothing removed or changed (no lost checkpoint) —
#     except the paths a case names on `created:` lines.
# The case format, and how to add one, is in docs/testing.md ("Bad inputs").
# Env: PR (the binary), ROOT (repo root), PYTHON (with NumPy). Writes only in
# the current (empty, temporary) directory. Exit 0 when every case passes,
# 1 otherwise, with the list of failures: expected vs got.
# Usage: sh test/scripts/bad_inputs.sh [NAME-FILTER]
# shellcheck disable=SC2317 # the setup: helpers are called through eval
set -u
: "${PR:?PR must name the paddle-run binary}" "${ROOT:?ROOT must name the repository root}"
PYTHON=${PYTHON:-/usr/bin/python3}
CASE_TIMEOUT=${CASE_TIMEOUT:-60}
BAD=$ROOT/test/bad
FILTER=${1:-}
TOP=$(pwd)

# ---- helpers for `setup:` lines (run with the case's work dir as cwd) ----------
# py CODE: Python with numpy as np, and gzip, os, struct imported
py() { "$PYTHON" -c "import gzip, os, struct; import numpy as np
$1"; }
# npy FILE DTYPE SHAPE: an array of that dtype and shape ('3,4'), values
# 0, 1, 2, ... modulo 2 (so they fit every dtype and every 2-class label)
npy() { py "np.save('$1', (np.arange(int(np.prod(($3,)))) % 2).reshape(($3,)).astype('$2'))"; }
# gz FILE OUT: gzip-compresses FILE into OUT
gz() { py "open('$2', 'wb').write(gzip.compress(open('$1', 'rb').read(), mtime=0))"; }
# cut_bytes FILE N: drops the last N bytes of FILE
cut_bytes() { py "b = open('$1', 'rb').read(); open('$1', 'wb').write(b[:len(b) - $2])"; }
# pr ARGS...: paddle-run for the setup (e.g. to write a checkpoint); must succeed
pr() { "$PR" "$@" >setup.log 2>&1 || { cat setup.log; return 1; }; rm -f setup.log; }

# snapshot DIR: every path below DIR with its type, a file's checksum and a
# link's target, one per line, sorted
snapshot() {
  (cd "$1" && {
    find . -mindepth 1 -type d -printf 'dir  %p\n'
    find . -mindepth 1 -type l -printf 'link %p -> %l\n'
    find . -mindepth 1 -type f -exec cksum {} + | awk '{ p = $3; for (i = 4; i <= NF; i++) p = p " " $i; print "file " p " " $1 " " $2 }'
  } | LC_ALL=C sort)
}

# ---- the base every case starts from ------------------------------------------
# test/bad/common/ (net.pbtxt: a two-layer classifier bound to x.npy and y.npy)
# plus generated data and a checkpoint of it after 4 steps (ckpt/).
BASE=$TOP/base
mkdir -p "$BASE"
cp -a "$BAD/common/." "$BASE/"
(cd "$BASE" && py "
rng = np.random.default_rng(1)
np.save('x.npy', rng.standard_normal((32, 4)).astype(np.float32))
np.save('y.npy', rng.integers(0, 2, (32, 1)).astype(np.int64))" && pr train net.pbtxt --save ckpt) || {
  echo "FAIL: the catalogue's base net (test/bad/common/net.pbtxt) does not train"
  exit 1
}

# ---- run the cases -------------------------------------------------------------
total=0 passed=0
failures="" failed_names=""
for casefile in "$BAD"/*/case; do
  [ -f "$casefile" ] || continue
  dir=$(dirname "$casefile")
  name=$(basename "$dir")
  case "$name" in *"$FILTER"*) ;; *) continue ;; esac
  total=$((total + 1))
  work=$TOP/cases/$name
  log=$TOP/logs/$name.out
  mkdir -p "$work" "$TOP/logs"
  cp -a "$BASE/." "$work/"
  for f in "$dir"/* "$dir"/.[!.]*; do
    [ -e "$f" ] && [ "$(basename "$f")" != case ] && cp -a "$f" "$work/"
  done

  cmd="" want_exit="" problems="" rc="" limit=$CASE_TIMEOUT
  setup_ok=1
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
    setup:*)
      s=${line#setup:}
      if ! (cd "$work" && eval "$s") >"$log.setup" 2>&1; then
        setup_ok=0
        problems="$problems
    setup failed: $s
$(sed 's/^/      | /' "$log.setup" | head -n 10)"
      fi
      ;;
    cmd:*) cmd=${line#cmd:} ;;
    exit:*) want_exit=$(echo "${line#exit:}" | tr -d ' ') ;;
    timeout:*) limit=$(echo "${line#timeout:}" | tr -d ' ') ;;
    esac
  done <"$casefile"
  if [ -z "$cmd" ] || [ -z "$want_exit" ]; then
    failures="$failures
  $name: the case needs a cmd: and an exit: line"
    failed_names="$failed_names${failed_names:+ }$name"
    echo "FAIL $name"
    continue
  fi

  if [ $setup_ok = 1 ]; then
    before=$(snapshot "$work")
    (cd "$work" && eval "timeout -k 5 $limit \"\$PR\" $cmd") </dev/null >"$log" 2>&1
    rc=$?
    after=$(snapshot "$work")
    out=$(cat "$log")

    [ "$rc" = "$want_exit" ] || problems="$problems
    expected exit $want_exit, got $rc$([ $rc -eq 124 ] && echo ' (timed out: a hang)')$([ $rc -gt 128 ] && echo " (killed by signal $((rc - 128)): a crash)")"
    case "$out" in *Sanitizer* | *"runtime error:"*) problems="$problems
    a sanitizer report" ;; esac
    [ -n "$out" ] || problems="$problems
    no message at all"

    while IFS= read -r line || [ -n "$line" ]; do
      case "$line" in
      message:*)
        m=${line#message:}
        m=${m# }
        printf '%s\n' "$out" | grep -qF -- "$m" || problems="$problems
    expected the message to contain: $m"
        ;;
      match:*)
        m=${line#match:}
        m=${m# }
        printf '%s\n' "$out" | grep -qE -- "$m" || problems="$problems
    expected the message to match: $m"
        ;;
      esac
    done <"$casefile"

    # the work dir as the command found it, but for the created: paths
    printf '%s\n' "$before" >"$log.before"
    printf '%s\n' "$after" >"$log.after"
    changes=$(diff "$log.before" "$log.after" | grep '^[<>] ' |
      awk -v allowed="$(sed -n 's/^created: *//p' "$casefile" | tr '\n' ' ')" '
        BEGIN { n = split(allowed, a, /[ \n]+/) }
        { for (i = 1; i <= n; i++) if (a[i] != "" && ($3 == "./" a[i] || index($3, "./" a[i] "/") == 1)) next; print }')
    if [ -n "$changes" ]; then
      problems="$problems
    the work directory changed (< was there before, > is there after):
$(printf '%s\n' "$changes" | sed 's/^/      /' | head -n 10)"
    fi
  fi

  if [ -z "$problems" ]; then
    passed=$((passed + 1))
    echo "ok   $name"
  else
    echo "FAIL $name"
    failed_names="$failed_names${failed_names:+ }$name"
    failures="$failures
  $name: $(sed -n 's/^cmd: *//p' "$casefile")$problems
$([ -n "$rc" ] && printf '\n    got (exit %s):\n' "$rc" && sed 's/^/      | /' "$log" | head -n 6)"
  fi
done

# ---- summary: cases per area (the name up to the first '-') ----------------------
areas=$(for c in "$BAD"/*/case; do basename "$(dirname "$c")"; done | sed 's/-.*//' | sort | uniq -c |
  awk '{ printf "%s%s %d", sep, $2, $1; sep = ", " }')
echo "catalogue: $areas"
if [ "$total" -eq 0 ]; then
  echo "FAIL: no case matched \"$FILTER\""
  exit 1
fi
if [ "$passed" -ne "$total" ]; then
  echo "failed cases, expected vs got:$failures"
  echo "failed: $failed_names"
  echo "bad inputs: $passed of $total cases passed, $((total - passed)) failed"
  exit 1
fi
echo "bad inputs: all $total cases passed"
exit 0

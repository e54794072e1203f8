#!/bin/sh
# deps.sh — install the Debian packages paddle-run needs, quietly, and only
# those that are missing. Usage: mk/deps.sh PACKAGE...
# Run by `make deps` (and so by `make test` and `make demo`).
set -eu
missing=""
for p in "$@"; do
  st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  case "$st" in
  ii*) ;;
  *) missing="$missing $p" ;;
  esac
done
[ -z "$missing" ] && exit 0
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "deps: missing packages:$missing; run as root: apt-get install$missing" >&2
    exit 1
  fi
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null

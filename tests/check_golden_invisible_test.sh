#!/usr/bin/env bash
# scripts/check-golden.sh names differences that do not show when printed: a stand-in for
# lockstep-sim prints the bounce chain with \r\n line ends (a Windows build writing text-mode
# stdout), then with a trailing space; the checker must fail and say which bytes differ.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stand_in=$(mktemp)
trap 'rm -f "$stand_in"' EXIT
cat >"$stand_in" <<'SH'
ending=$1
shift
grep -v -e '^#' -e '^[[:space:]]*$' "$GOLDEN" | sed "s/\$/$ending/"
SH
check() {
  local ending=$1 expect=$2 out
  if out=$(GOLDEN="$root/tests/golden/bounce.txt" bash "$root/scripts/check-golden.sh" \
    --scene bounce -- bash "$stand_in" "$ending"); then
    echo "FAIL: check-golden passed a chain with '$ending' line ends"
    exit 1
  fi
  if ! grep -qF -- "$expect" <<<"$out"; then
    echo "FAIL: expected '$expect' in:"
    echo "$out"
    exit 1
  fi
  echo "ok: $(tail -1 <<<"$out")"
}
check $'\r' "the line ends in a carriage return"
check ' ' "they differ in invisible bytes: expected 60\\ "

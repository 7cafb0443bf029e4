#!/usr/bin/env bash
# The scripts' wait for a server's port (scripts/lib/processes.sh, wait_for_server_port) polls an
# output file that the server's background shell may not have opened yet: a missing file is
# "nothing said yet", not an error that ends the script (under set -e a failed sed did). And a
# server that exits without a port is a clear failure, not a hang.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# shellcheck source=../scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"

# A "server" whose output file appears only after 0.3 s and then names its port.
(
  sleep 0.3
  echo "listening port=4321" >"$work/late.out"
  sleep 30
) &
server_pid=$!
wait_for_server_port "$work/late.out"
[ "$port" = 4321 ] || fail "read port '$port' from a file that appeared late, want 4321"
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true

# A "server" that exits without ever writing its file.
(exit 3) &
server_pid=$!
said=$( (wait_for_server_port "$work/never.out") 2>&1) && fail "a server that exited gave port '$port'"
grep -q "exited at start" <<<"$said" || fail "a server that exited was reported as: $said"
echo "wait_for_server_port: a late output file is waited for, an exited server is reported"

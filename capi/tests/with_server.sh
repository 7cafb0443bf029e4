#!/usr/bin/env bash
# Runs a command against a fresh lockstep-server on 127.0.0.1: starts the server on a port the
# kernel picks, waits until it prints `listening port=N`, runs the command with every @PORT@ in
# its arguments replaced by N, stops the server (SIGINT) and exits with the command's status.
#   with_server.sh SERVER_EXE [server args...] -- COMMAND [args...]
set -euo pipefail
server=$1
shift
server_args=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  server_args+=("$1")
  shift
done
[ "${1:-}" = -- ] || { echo "with_server.sh: missing -- COMMAND" >&2; exit 2; }
shift

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -INT "$server_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The file exists before the server starts: the poll below must not race its redirection.
: >"$work/server.out"
"$server" --bind 127.0.0.1 --port 0 --log-level warn "${server_args[@]}" \
  >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
port=""
# The condition is the server's own line; the loop only bounds how long a broken start may take.
for _ in $(seq 300); do
  port=$(sed -n 's/^listening port=\([0-9][0-9]*\)$/\1/p' "$work/server.out")
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "with_server.sh: the server exited at start" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "with_server.sh: the server did not report its port within 30 s" >&2; exit 1; }

args=()
for a in "$@"; do args+=("${a//@PORT@/$port}"); done
rc=0
"${args[@]}" || rc=$?
if [ $rc -ne 0 ]; then
  echo "with_server.sh: the command failed ($rc); the server's log:" >&2
  tail -n 20 "$work/server.log" >&2
fi
exit $rc

#!/usr/bin/env bash
# SIGTERM is a graceful shutdown, as a container runtime or Agones sends it: with a bot in a
# room, lockstep-server must stop being ready, disconnect the bot with server_shutdown, write the
# room's replay window, print its summary and exit 0.
# Usage: sigterm_test.sh LOCKSTEP_SERVER LOCKSTEP_BOT
set -euo pipefail
server_bin=$(realpath "$1")
bot_bin=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }

start_server --empty-room-grace-ms 10000
spawn bot "$bot_bin" --port "$port" --room match --seconds 120
bot_pid=$last_pid
wait_until "the bot in the server's counters" 60 metric_is lockstep_clients 1
ready_status() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$metrics_port/readyz"; }
[ "$(ready_status)" = 200 ] || fail "/readyz is not 200 while serving"

kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
[ "$status" = 0 ] || fail "lockstep-server exited $status after SIGTERM"
grep -q '^summary {' "$work/server.out" || fail "no summary line after SIGTERM"
grep -q 'signal 15: graceful shutdown' "$work/server.log" || fail "no graceful-shutdown log line"
compgen -G "$work/replays/shutdown-match-*.lsrp" >/dev/null ||
  fail "no shutdown replay of room 'match' in $work/replays: $(ls "$work/replays" 2>&1)"
echo "shutdown replay: $(cd "$work/replays" && ls shutdown-match-*.lsrp)"
# The bot was told the server shut down (it exits non-zero: an unexpected disconnect for it).
wait "$bot_pid" 2>/dev/null || true
grep -q 'server_shutdown' "$work/bot.out" "$work/bot.log" || fail "the bot did not see server_shutdown"
echo "ok"

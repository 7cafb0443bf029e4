# shellcheck shell=bash disable=SC2154  # server_bin: set by the sourcing script
# Sourced by the ops tests: a temporary folder, processes started under `timeout` (so they end
# even if this script is killed) and stopped by their own ids on exit, and small HTTP helpers.
# The caller sets nothing; it gets `work`, `pids`, `fail`, `start_server` and `http_get`.

work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-ops.XXXXXX")
pids=()
# Every child lives at most this long: a hung test cannot leave processes behind.
child_limit_s=${LOCKSTEP_OPS_CHILD_LIMIT_S:-150}

cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  local log
  for log in "$work"/*.log "$work"/*.out; do
    [ -f "$log" ] || continue
    echo "---- $log (last 30 lines)" >&2
    tail -n 30 "$log" >&2
  done
  exit 1
}

# spawn NAME CMD...: runs CMD in $work under `timeout`, stdout to NAME.out, stderr to NAME.log;
# sets `last_pid`.
# --foreground: without it timeout forwards a signal to its child and then to its whole process
# group, so a SIGTERM sent to it reaches the server twice, which the server takes for an
# operator's second signal ("stop now") whenever the two do not merge in the kernel.
spawn() {
  local name=$1
  shift
  # The files exist before the child runs: a reader polling them must not race its redirection.
  : >"$work/$name.out"
  : >"$work/$name.log"
  (cd "$work" && exec timeout --foreground -s TERM "$child_limit_s" "$@" >"$work/$name.out" \
    2>"$work/$name.log") &
  last_pid=$!
  pids+=("$last_pid")
}

# start_server ARGS...: $server_bin, lockstep-server on ephemeral ports with a metrics listener; sets
# server_pid, port and metrics_port from its stdout.
start_server() {
  spawn server "$server_bin" --bind 127.0.0.1 --port 0 --metrics-bind 127.0.0.1 --metrics-port 0 \
    --replay-dir "$work/replays" --stats-interval-ms 0 "$@"
  server_pid=$last_pid
  port=""
  metrics_port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/^listening port=\([0-9][0-9]*\)$/\1/p' "$work/server.out")
    metrics_port=$(sed -n 's/^metrics port=\([0-9][0-9]*\)$/\1/p' "$work/server.out")
    [ -n "$port" ] && [ -n "$metrics_port" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || fail "lockstep-server exited at start"
    sleep 0.1
  done
  fail "lockstep-server did not report its ports within 30 s"
}

# http_get URL: the body, or nothing (status != 2xx or no answer).
http_get() {
  curl -fsS --max-time 5 "$1" 2>/dev/null || true
}

# metric NAME: the value of series NAME in the server's /metrics (empty when absent).
metric() {
  http_get "http://127.0.0.1:$metrics_port/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}

# metric_is NAME VALUE: whether series NAME has VALUE now (for wait_until).
metric_is() {
  [ "$(metric "$1")" = "$2" ]
}

# wait_until DESCRIPTION SECONDS CMD...: runs CMD every 0.2 s until it succeeds (CMD is run
# anew each time: pass a function, not the result of a $(...)).
wait_until() {
  local what=$1 limit=$2
  shift 2
  local end=$((SECONDS + limit))
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || fail "timed out after ${limit} s waiting for: $what"
    sleep 0.2
  done
}

# shellcheck shell=bash disable=SC2154  # work, bot_pids, server_pid: set by the sourcing script
# Sourced by scripts that run a lockstep-server and clients (demo.sh, server-load.sh).
# They set `work` (a temporary folder), `server_pid` and `bot_pids`, and define `fail`.

# Stops whatever is still running and removes $work: the EXIT trap of those scripts.
stop_processes_and_clean_up() {
  local pid
  for pid in "${bot_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$work"
}

# start_server_process OUTFILE LOGFILE COMMAND...: runs COMMAND in the background with its stdout
# in OUTFILE and its stderr in LOGFILE, sets `server_pid`, then waits for its port (below). Both
# files are removed first: a script that starts servers one after another must not read the port
# an earlier server left in the same file before the new one's shell has truncated it.
start_server_process() {
  local out=$1 log=$2
  shift 2
  rm -f "$out" "$log"
  "$@" >"$out" 2>"$log" &
  server_pid=$!
  wait_for_server_port "$out"
}

# wait_for_server_port OUTFILE: sets `port` from the server's `listening port=N` line (it binds
# port 0, so the kernel picks a free one); fails if the server exits or says nothing for 10 s.
wait_for_server_port() {
  port=""
  for _ in $(seq 100); do
    # The file may not exist yet: the background shell has not reached its redirection.
    [ -f "$1" ] && port=$(sed -n 's/^listening port=\([0-9][0-9]*\)$/\1/p' "$1")
    [ -n "$port" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || fail "lockstep-server exited at start"
    sleep 0.1
  done
  fail "lockstep-server did not report its port within 10 s"
}

#!/usr/bin/env bash
# Server load benchmark: numbers, never a timed test.
#   1. build lockstep-server, lockstep-load and lockstep-bot in Release;
#   2. for N in $LOAD_ROOMS (10 50 100 200): start lockstep-server on 127.0.0.1 (free port,
#      --max-rooms N+8 and --summary-closed-rooms N+8 (rooms that close before the stop stay in
#      the summary), --max-connections 4·(N+8) (the default 1024 would refuse clients past 256
#      rooms), no per-address limits (every client is 127.0.0.1), no replay windows,
#      log level warn), run lockstep-load with N rooms x 4 raw clients for $LOAD_SECONDS (20) s, read the server's CPU (utime+stime from /proc/<pid>/stat
#      before and after, as % of one core), SIGINT it and parse its `summary {json}` line;
#   3. one sanity row with real lockstep-bot processes ($BOT_ROOMS rooms x 4 bots, $BOT_SECONDS s);
#   4. write the CSV ($LOAD_CSV, default bench/results/<machine>/server_load.csv) and print it.
# Environment: BUILD_DIR (build/release), LOAD_ROOMS, LOAD_SECONDS, BOT_ROOMS (10, 0 = skip),
# BOT_SECONDS (10), LOAD_CSV, LOAD_THREADS (the server's --threads, default 1; also --threads N),
# LOAD_SCENE (the server's --scene, default its own: `inputs`, the demo; also --scene NAME|FILE:
# e.g. `bounce`, four spheres nobody owns, whose step is nearly free, to measure the server's
# network side alone; the bot row then runs that scene too; the server refuses to start on a name
# it does not know, and the CSV's scene column is what its summary says every room ran),
# LOAD_NO_BUILD=1 (use the binaries already in BUILD_DIR, as the tests do).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build/release}
rooms_list=${LOAD_ROOMS:-"10 50 100 200"}
seconds=${LOAD_SECONDS:-20}
bot_rooms=${BOT_ROOMS:-10}
bot_seconds=${BOT_SECONDS:-10}
players=4
threads=${LOAD_THREADS:-1}
scene=${LOAD_SCENE:-}
usage() {
  echo "server-load: $1 (use --threads N, --scene NAME|FILE)" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --threads | --scene) [ $# -ge 2 ] && [ -n "$2" ] || usage "$1 needs a value"
      set -- "$1=$2" "${@:3}" ;;
    --threads=*) threads=${1#--threads=}; shift ;;
    --scene=*) scene=${1#--scene=}; [ -n "$scene" ] || usage "--scene needs a value"; shift ;;
    *) usage "unknown argument $1" ;;
  esac
done
scene_args=()
[ -n "$scene" ] && scene_args=(--scene "$scene")

# shellcheck source=lib/bench-common.sh
source scripts/lib/bench-common.sh
csv=${LOAD_CSV:-$(bench_results_dir)/server_load.csv}

[ "${LOAD_NO_BUILD:-0}" = 1 ] || bench_build "$build" lockstep-server lockstep-load lockstep-bot
bin="$build/apps"
load="$build/bench/lockstep-load"

work=$(mktemp -d "${TMPDIR:-/tmp}/srvload.XXXXXX")
server_pid=""
bot_pids=()
# shellcheck source=lib/processes.sh
source scripts/lib/processes.sh
trap stop_processes_and_clean_up EXIT
trap 'echo "server-load: interrupted" >&2; exit 130' INT TERM
fail() {
  echo "server-load: FAILED: $*" >&2
  [ -s "$work/server.log" ] && tail -n 15 "$work/server.log" >&2
  exit 1
}

hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, in clock ticks
now_s() { date +%s.%N; }

start_server() {  # $1 = max rooms, also the closed rooms the summary keeps
  "$bin/lockstep-server" --bind 127.0.0.1 --port 0 --log-level warn --replay-dir "" \
    --max-rooms "$1" --summary-closed-rooms "$1" --max-connections $(($1 * players)) \
    --threads "$threads" "${scene_args[@]}" \
    --max-connections-per-ip 0 --max-rooms-per-ip-per-minute 0 --stats-interval-ms 0 \
    >"$work/server.out" 2>"$work/server.log" &
  server_pid=$!
  wait_for_server_port "$work/server.out"
}

stop_server() {  # SIGINT, bounded wait; leaves the summary JSON in $work/summary.json
  kill -INT "$server_pid"
  for _ in $(seq 150); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$server_pid" 2>/dev/null && { kill -KILL "$server_pid"; fail "server did not stop"; }
  wait "$server_pid" || fail "lockstep-server exited non-zero"
  server_pid=""
  sed -n 's/^summary //p' "$work/server.out" >"$work/summary.json"
  [ -s "$work/summary.json" ] || fail "no summary line from lockstep-server"
}

# $1 kind, $2 rooms, $3 seconds, $4 cpu %, $5 wall seconds the rooms existed, $6 client JSON
# ({bytes_in_per_client_per_s, bytes_out_per_client_per_s, tick_frames_per_client_per_s,
# rtt_ms_p50, rtt_ms_p99, errors}, in the client's view); prints one CSV row, whose bytes columns
# are in the SERVER's view (bytes_out = server → client, what a client downloads). `errors`
# counts what breaks a connection (client-side fatal errors, protocol errors, slow consumers,
# timeouts); `input_errors` (the server's input_rejected/input_late count) is apart: a server
# lagging its schedule makes the clients' inputs late, and late inputs pile onto one tick past
# its per-tick cap.
csv_row() {
  python3 - "$work/summary.json" "$@" <<'EOF'
import json, statistics, sys
summary = json.load(open(sys.argv[1]))
kind, rooms, seconds, cpu, wall, client = sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), \
    float(sys.argv[5]), float(sys.argv[6]), json.loads(sys.argv[7])
# The summary lists the rooms still open at the stop and then the closed ones (a room whose
# clients left before the stop closes after its grace). Every closed room must be listed, or the
# count below would be short for a reason that is not the benchmark's.
listed_closed = sum(1 for r in summary["rooms"] if not r["open"])
if "rooms_closed" in summary and summary["rooms_closed"] > listed_closed:
    sys.exit(f"the summary lists {listed_closed} of {summary['rooms_closed']} closed rooms: "
             "raise --summary-closed-rooms")
# One entry per name, open or closed; a name seen twice (closed, then made again by a late
# client) counts once, by its entry that ran longest.
by_name = {}
for r in summary["rooms"]:
    if r["name"].startswith(("load-", "bot-")):
        if r["name"] not in by_name or r["ticks"] > by_name[r["name"]]["ticks"]:
            by_name[r["name"]] = r
rs = list(by_name.values())
if len(rs) != rooms:
    open_rooms = sum(1 for r in rs if r["open"])
    sys.exit(f"expected {rooms} rooms in the summary, found {len(rs)} "
             f"({open_rooms} open, {len(rs) - open_rooms} closed)")
ticks = statistics.median(r["ticks"] for r in rs)
p50 = statistics.median(r["lateness_p50_us"] for r in rs)
p99 = statistics.median(r["lateness_p99_us"] for r in rs)
worst = max(r["lateness_p99_us"] for r in rs)
late = sum(r["late_ticks"] for r in rs) / sum(r["ticks"] for r in rs)
step = statistics.median(r["step_mean_us"] for r in rs)
# The scene column is the server's word, not the request's: every room must have run the same one.
scenes = sorted({r["scene"] for r in rs})
if len(scenes) != 1:
    sys.exit(f"the rooms ran different scenes: {', '.join(scenes)}")
errors = int(client["errors"]) + summary["protocol_errors"] + \
    summary["slow_consumer_disconnects"] + summary["timeouts"]
load1 = open("/proc/loadavg").read().split()[0]
print(f"{kind},{summary.get('threads', 1)},{rooms},{rooms*4},{seconds:g},{cpu:.1f},{ticks/wall:.2f},{p50:.0f},{p99:.0f},"
      f"{worst:.0f},{client['bytes_in_per_client_per_s']:.0f},"
      f"{client['bytes_out_per_client_per_s']:.0f},{errors},"
      f"{client['tick_frames_per_client_per_s']:.2f},{late*100:.2f},"
      f"{client['rtt_ms_p50']:.3f},{client['rtt_ms_p99']:.3f},{summary['input_errors']},"
      f"{step:.0f},{load1},{client.get('load_cpu_percent', '')},{scenes[0]}")
EOF
}

mkdir -p "$(dirname "$csv")"
header="client,threads,rooms,clients,seconds,server_cpu_percent,ticks_per_room_per_s,p50_lateness_us"
header+=",p99_lateness_us,worst_room_p99_us,bytes_out_per_client_per_s"
header+=",bytes_in_per_client_per_s,errors,tick_frames_per_client_per_s,late_tick_percent"
header+=",rtt_ms_p50,rtt_ms_p99,input_errors,step_mean_us,load_avg_1m,load_cpu_percent,scene"
rows=()

for n in $rooms_list; do
  start_server $((n + 8))
  echo "== $n rooms x $players lockstep-load clients, ${seconds} s, scene ${scene:-default} (server port $port) =="
  t0=$(now_s); c0=$(cpu_ticks "$server_pid")
  load_rc=0
  timeout --signal=INT --kill-after=5 $((seconds + 60)) "$load" --host 127.0.0.1 --port "$port" \
    --rooms "$n" --players "$players" --seconds "$seconds" >"$work/load.out" || load_rc=$?
  c1=$(cpu_ticks "$server_pid"); t1=$(now_s)
  stop_server
  client=$(sed -n 's/^load //p' "$work/load.out")
  [ -n "$client" ] || fail "no load line from lockstep-load (exit $load_rc)"
  cpu=$(python3 -c "print(($c1 - $c0) / $hz / ($t1 - $t0) * 100)")
  wall=$(python3 -c "print($t1 - $t0)")
  rows+=("$(csv_row load "$n" "$seconds" "$cpu" "$wall" "$client")")
  echo "${rows[-1]}"
done

if [ "$bot_rooms" -gt 0 ]; then
  start_server $((bot_rooms + 8))
  echo "== sanity: $bot_rooms rooms x $players lockstep-bot processes, ${bot_seconds} s =="
  t0=$(now_s); c0=$(cpu_ticks "$server_pid")
  for r in $(seq 0 $((bot_rooms - 1))); do
    for p in $(seq 1 "$players"); do
      timeout --signal=INT --kill-after=5 $((bot_seconds + 30)) "$bin/lockstep-bot" \
        --host 127.0.0.1 --port "$port" --room "bot-$r" --name "bot$p" --seed "$((r * 16 + p))" \
        --seconds "$bot_seconds" --quiet >"$work/bot-$r-$p.out" 2>"$work/bot-$r-$p.log" &
      bot_pids+=($!)
    done
  done
  bot_failures=0
  for pid in "${bot_pids[@]}"; do wait "$pid" || bot_failures=$((bot_failures + 1)); done
  bot_pids=()
  c1=$(cpu_ticks "$server_pid"); t1=$(now_s)
  stop_server
  # The bots' summary lines → the same client JSON as lockstep-load's (means over bots).
  client=$(cat "$work"/bot-*.out | python3 -c "
import json, re, statistics, sys
rows = [dict(re.findall(r'(\w+)=([-0-9.e]+)', line)) for line in sys.stdin if 'desyncs=' in line]
get = lambda k: [float(r.get(k, 0)) for r in rows] or [0.0]
print(json.dumps({'bytes_in_per_client_per_s': statistics.mean(get('bytes_in_per_s')),
  'bytes_out_per_client_per_s': statistics.mean(get('bytes_out_per_s')),
  'tick_frames_per_client_per_s': statistics.mean(get('ticks_verified')) / $bot_seconds,
  'rtt_ms_p50': statistics.median(get('rtt_ms_p50')), 'rtt_ms_p99': max(get('rtt_ms_p99')),
  'errors': int(sum(get('errors')) + sum(get('desyncs'))) + $bot_failures
    + ($bot_rooms * $players - len(rows))}))")
  cpu=$(python3 -c "print(($c1 - $c0) / $hz / ($t1 - $t0) * 100)")
  wall=$(python3 -c "print($t1 - $t0)")
  rows+=("$(csv_row bot "$bot_rooms" "$bot_seconds" "$cpu" "$wall" "$client")")
  echo "${rows[-1]}"
fi

{
  echo "$header"
  printf '%s\n' "${rows[@]}"
} >"$csv"
echo "== $csv =="
column -s, -t "$csv" 2>/dev/null || cat "$csv"

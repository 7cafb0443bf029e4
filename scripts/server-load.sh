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
#
# --pin: rooms per core. The server (--threads 1: every room and socket on one thread) runs on
# core 0 and lockstep-load on core 1 (taskset), and the room count steps up until the server
# misses the goal: p99 tick lateness <= 2 ms over every tick of every room (at most 1 % of ticks
# over 2 ms late), no late, refused or broken input, no schedule moved. Each row is measured over
# a window of LOAD_SECONDS that begins PIN_WARMUP (5) s after the clients start, once every
# room exists (creating rooms is a burst that the first rooms wait for; it is not the steady
# cost): the server's /metrics at both ends (--metrics-port, published every 100 ms) give the
# ticks, lateness, inputs and the steps' CPU time (the server's own per-thread CPU clock around
# each step); /proc/<pid>/task/<tid>/stat gives the server thread's CPU, split into user and
# kernel time, and its wake-ups (voluntary context switches) and preemptions. Per room-second
# that is the CPU of the steps and of the rest (sockets, Asio, sessions, encoding). Both scenes by
# default: `inputs` (the demo, a real step) and `bounce` (a near-free step: what is left is the
# network side). The CSV is bench/results/<machine>/server_load_pinned.csv ($LOAD_CSV).
# Environment for --pin: PIN_SCENES ("inputs bounce"; --scene picks one), PIN_ROOMS (a fixed
# list instead of the ramp 20 40 … up to PIN_MAX_ROOMS, 400, which stops at the first row
# that misses the goal on every attempt; a list runs every row), PIN_RETRIES (1: a row that misses runs again
# before it counts; both are in the table), PIN_WARMUP (5 s), PIN_SERVER_CORE (0),
# PIN_LOAD_CORE (1), LOAD_SECONDS (20), LOAD_PLAYERS (4: clients per room), PIN_RT=1 (both
# processes SCHED_FIFO on their cores, `chrt -f 1`: on a machine that other work shares, a core
# that is the server's whenever it has work, as a dedicated core would be; needs root).
# On loopback a send also runs the receiver's TCP receive path on the sender's core, so the
# server's kernel time holds its clients' receive of the TickFrames and not its own receive of
# their inputs (the generator's core pays that): see docs/deploy.md, "Rooms per core".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build/release}
rooms_list=${LOAD_ROOMS:-"10 50 100 200"}
seconds=${LOAD_SECONDS:-20}
bot_rooms=${BOT_ROOMS:-10}
bot_seconds=${BOT_SECONDS:-10}
players=4  # --pin: LOAD_PLAYERS
threads=${LOAD_THREADS:-1}
threads_given=0
scene=${LOAD_SCENE:-}
pin=0
usage() {
  echo "server-load: $1 (use --threads N, --scene NAME|FILE, --pin)" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --threads | --scene) [ $# -ge 2 ] && [ -n "$2" ] || usage "$1 needs a value"
      set -- "$1=$2" "${@:3}" ;;
    --threads=*) threads=${1#--threads=}; threads_given=1; shift ;;
    --pin) pin=1; shift ;;
    --scene=*) scene=${1#--scene=}; [ -n "$scene" ] || usage "--scene needs a value"; shift ;;
    *) usage "unknown argument $1" ;;
  esac
done
scene_args=()
[ -n "$scene" ] && scene_args=(--scene "$scene")
server_cmd=()
load_cmd=()
if [ "$pin" = 1 ]; then
  [ "$threads_given" = 0 ] || usage "--pin runs the server on one thread; leave out --threads"
  threads=1
  players=${LOAD_PLAYERS:-4}
  server_core=${PIN_SERVER_CORE:-0}
  load_core=${PIN_LOAD_CORE:-1}
  command -v taskset >/dev/null || { echo "server-load: --pin needs taskset (util-linux)" >&2; exit 2; }
  [ "$(nproc)" -ge 2 ] || { echo "server-load: --pin needs 2 cores, this machine has $(nproc)" >&2; exit 2; }
  server_cmd=(taskset -c "$server_core")
  load_cmd=(taskset -c "$load_core")
  if [ "${PIN_RT:-0}" = 1 ]; then
    # A shared machine: each process gets its core before anything else that runs there
    # (SCHED_FIFO; the kernel still leaves others 5 % of every second), as on a core of its own.
    command -v chrt >/dev/null || { echo "server-load: PIN_RT=1 needs chrt (util-linux)" >&2; exit 2; }
    server_cmd+=(chrt -f 1)
    load_cmd+=(chrt -f 1)
  fi
fi

# shellcheck source=lib/bench-common.sh
source scripts/lib/bench-common.sh
if [ "$pin" = 1 ]; then
  csv=${LOAD_CSV:-$(bench_results_dir)/server_load_pinned.csv}
else
  csv=${LOAD_CSV:-$(bench_results_dir)/server_load.csv}
fi

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
  start_server_process "$work/server.out" "$work/server.log" \
    "${server_cmd[@]}" "$bin/lockstep-server" --bind 127.0.0.1 --port 0 --log-level warn --replay-dir "" \
    --max-rooms "$1" --summary-closed-rooms "$1" --max-connections $(($1 * players)) \
    --threads "$threads" "${scene_args[@]}" \
    --max-connections-per-ip 0 --max-rooms-per-ip-per-minute 0 --stats-interval-ms 0
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

# Per-thread CPU of a process: one line per thread "tid comm utime stime waits preemptions"
# (utime and stime in clock ticks from /proc/<pid>/task/<tid>/stat, the fields after the
# parenthesised name; voluntary and involuntary context switches from .../status).
thread_cpu() {
  local task stat fields
  for task in /proc/"$1"/task/*; do
    stat=$(cat "$task/stat" 2>/dev/null) || continue
    read -r -a fields <<<"${stat##*) }"
    printf '%s %s %s %s %s\n' "${task##*/}" "$(tr -c 'A-Za-z0-9_\n-' _ <"$task/comm")" \
      "${fields[11]}" "${fields[12]}" "$(awk '/^voluntary_ctxt_switches/ {v = $2}
        /^nonvoluntary_ctxt_switches/ {n = $2} END {print v, n}' "$task/status")"
  done
}

# One end of the measured window: the server's /metrics, its threads' CPU, the time.
pin_sample() {  # $1 = file prefix
  thread_cpu "$server_pid" >"$1.threads"
  now_s >"$1.time"
  curl -sf --max-time 5 "http://127.0.0.1:$metrics_port/metrics" >"$1.metrics" ||
    fail "no answer from the server's /metrics"
}

# $1 scene, $2 rooms, $3 client JSON, $4 load average before; the window's two ends in
# $work/w0.* and $work/w1.*, the summary in $work/summary.json. Prints one CSV row (pin_header).
pin_row() {
  python3 - "$work" "$hz" "$players" "$@" <<'EOF'
import json, re, sys
work, hz, players = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
scene_asked, rooms, client, load_before = sys.argv[4], int(sys.argv[5]), json.loads(sys.argv[6]), sys.argv[7]
summary = json.load(open(f"{work}/summary.json"))
def metrics(path):
    out = {}
    for line in open(path):
        m = re.match(r'^(\w+)(\{[^}]*\})? (\S+)$', line.strip())
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out
def threads(path):
    out = {}
    for line in open(path):
        tid, comm, ut, st, vol, invol = line.split()
        out[tid] = (comm, int(ut), int(st), int(vol), int(invol))
    return out
m0, m1 = metrics(f"{work}/w0.metrics"), metrics(f"{work}/w1.metrics")
d = lambda key: m1.get(key, 0.0) - m0.get(key, 0.0)
t0, t1 = threads(f"{work}/w0.threads"), threads(f"{work}/w1.threads")
wall = float(open(f"{work}/w1.time").read()) - float(open(f"{work}/w0.time").read())
rs = [r for r in summary["rooms"] if r["name"].startswith("load-")]
names = {r["name"] for r in rs}
if len(names) != rooms:
    sys.exit(f"expected {rooms} rooms in the summary, found {len(names)}")
scenes = sorted({r["scene"] for r in rs})
if scenes != [scene_asked]:
    sys.exit(f"asked for scene {scene_asked}, the rooms ran {', '.join(scenes)}")
ticks = d("lockstep_ticks_total")
if m0.get("lockstep_rooms", 0) != rooms or m1.get("lockstep_rooms", 0) != rooms or \
        m0.get("lockstep_clients", 0) != rooms * players:
    sys.exit(f"the window did not see all {rooms} rooms and {rooms * players} clients: "
             f"{m0.get('lockstep_rooms')} rooms, {m0.get('lockstep_clients')} clients at its start")
room_ticks = max(ticks, 1.0)
# Every room lives through the whole window: the CPU read from /proc is per room-second of
# wall time; the step's own clock comes with the metrics' tick count (the same window, read a
# moment later) and is scaled per tick.
room_seconds = rooms * wall
# Lateness in the window, from the histogram's power-of-two buckets (upper bounds) and the
# exact count of ticks over 2 ms: p99 <= 2 ms is exactly "at most 1 % of ticks over 2 ms".
bounds = sorted((float(k.split('le="')[1].rstrip('"}')), k) for k in m1
                if k.startswith("lockstep_tick_lateness_seconds_bucket") and "+Inf" not in k)
def quantile_us(q):
    for le, key in bounds:
        if d(key) >= q * ticks:
            return le * 1e6
    return float("inf")
late = d("lockstep_late_ticks_total")
late_pct = 100.0 * late / room_ticks
main_tid = min(t1, key=int)  # --threads 1: the rooms run on the main thread (tid = pid)
comm, ut1, st1, vol1, inv1 = t1[main_tid]
_, ut0, st0, vol0, inv0 = t0.get(main_tid, (comm, 0, 0, 0, 0))
user_s, kernel_s = (ut1 - ut0) / hz, (st1 - st0) / hz
cpu_s = user_s + kernel_s
def spent(t, a):
    b = t0.get(t, (a[0], 0, 0, 0, 0))
    return a[1] + a[2] - b[1] - b[2]
other_threads_s = sum(spent(t, a) for t, a in t1.items() if t != main_tid) / hz
step_us = d("lockstep_step_cpu_seconds_total") / room_ticks * 1e6
step_cpu_s = step_us / 1e6 * 60.0 * room_seconds  # 60 Hz: the server's default --tick-rate
rest_s = max(cpu_s - step_cpu_s, 0.0)
inputs_late = d("lockstep_inputs_late_total")
refused = d('lockstep_inputs_total{result="rejected"}') + d("lockstep_input_errors_total")
slips = d("lockstep_schedule_slips_total")
errors = int(client["errors"]) + summary["protocol_errors"] + \
    summary["slow_consumer_disconnects"] + summary["timeouts"]
meets = late_pct <= 1.0 and inputs_late == 0 and refused == 0 and slips == 0 and errors == 0
per_room_s_ms = lambda s: s / room_seconds * 1e3 if room_seconds > 0 else 0.0
load_after = open("/proc/loadavg").read().split()[0]
print(",".join(str(x) for x in [
    scenes[0], rooms, rooms * players, f"{wall:.1f}", f"{ticks / rooms / wall:.2f}",
    f"{quantile_us(0.5):.0f}", f"{quantile_us(0.99):.0f}", f"{late_pct:.2f}",
    f"{summary['lateness_p99_us_all_rooms']:.0f}", int(inputs_late), int(refused), int(slips),
    errors, f"{100 * cpu_s / wall:.1f}", f"{100 * kernel_s / cpu_s if cpu_s > 0 else 0:.0f}",
    f"{per_room_s_ms(cpu_s):.2f}", f"{per_room_s_ms(step_cpu_s):.2f}",
    f"{per_room_s_ms(rest_s):.2f}", f"{per_room_s_ms(kernel_s):.2f}",
    f"{step_us:.1f}", f"{rest_s / (60.0 * room_seconds) / players * 1e6:.1f}",
    f"{(vol1 - vol0) / (60.0 * room_seconds):.2f}", f"{(inv1 - inv0) / wall:.0f}",
    f"{100 * other_threads_s / wall:.1f}", client.get("load_cpu_percent", ""), load_before,
    load_after, "yes" if meets else "no"]))
EOF
}
pin_header="scene,rooms,clients,seconds,ticks_per_room_per_s,p50_lateness_us,p99_lateness_us"
pin_header+=",late_tick_percent,p99_with_joins_us,inputs_late,inputs_refused,schedule_slips,errors"
pin_header+=",server_thread_cpu_percent,kernel_percent,cpu_ms_per_room_s,step_ms_per_room_s"
pin_header+=",rest_ms_per_room_s,kernel_ms_per_room_s,step_cpu_us,rest_us_per_client_tick"
pin_header+=",wakeups_per_room_tick,preemptions_per_s,other_threads_cpu_percent"
pin_header+=",load_cpu_percent,load_avg_before,load_avg_after,meets_goal"

if [ "$pin" = 1 ]; then
  if [ -n "$scene" ]; then pin_scenes=$scene; else pin_scenes=${PIN_SCENES:-"inputs bounce"}; fi
  max_rooms=${PIN_MAX_ROOMS:-400}
  warmup=${PIN_WARMUP:-5}
  retries=${PIN_RETRIES:-1}  # a row that misses is run again this many times before it counts
  # 20, 40, … 120, then a quarter more each row (rounded to tens) up to PIN_MAX_ROOMS.
  ramp=${PIN_ROOMS:-$(n=20; while [ "$n" -le "$max_rooms" ]; do echo "$n"
    if [ "$n" -lt 120 ]; then n=$((n + 20)); else n=$((n + n / 40 * 10)); fi; done)}
  model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
  echo "== pinned: server on core $server_core, lockstep-load on core $load_core; $model, $(nproc) cores =="
  echo "== goal: p99 tick lateness <= 2 ms, no late or refused input, $players clients a room, 60 Hz; measured for ${seconds} s after ${warmup} s of joins =="
  rows=()
  best=()
  for pin_scene in $pin_scenes; do
    scene_args=(--scene "$pin_scene" --metrics-port 0 --metrics-bind 127.0.0.1
      --metrics-publish-ms 100)
    best_n=0
    for n in $ramp; do
      for attempt in $(seq 0 "$retries"); do
        load_before=$(cut -d' ' -f1 /proc/loadavg)
        start_server $((n + 8))
        for _ in $(seq 50); do  # printed right after the game port
          metrics_port=$(sed -n 's/^metrics port=\([0-9][0-9]*\)$/\1/p' "$work/server.out")
          [ -z "$metrics_port" ] || break
          sleep 0.1
        done
        [ -n "$metrics_port" ] || fail "lockstep-server printed no metrics port"
        echo "== $pin_scene: $n rooms x $players clients (load average $load_before) =="
        "${load_cmd[@]}" "$load" --host 127.0.0.1 --port "$port" --rooms "$n" --players "$players" \
          --seconds "$((warmup + seconds + 1))" >"$work/load.out" &
        load_pid=$!
        bot_pids=("$load_pid")  # stopped on exit with the rest
        sleep "$warmup"
        pin_sample "$work/w0"
        sleep "$seconds"
        pin_sample "$work/w1"
        load_rc=0
        wait "$load_pid" || load_rc=$?
        bot_pids=()
        stop_server
        client=$(sed -n 's/^load //p' "$work/load.out")
        [ -n "$client" ] || fail "no load line from lockstep-load (exit $load_rc)"
        rows+=("$(pin_row "$pin_scene" "$n" "$client" "$load_before")") ||
          fail "cannot read the run's figures"
        echo "${rows[-1]}"
        [ "${rows[-1]##*,}" != yes ] || break
        if [ "$attempt" -lt "$retries" ]; then
          echo "== missed: the same row once more (a shared machine stalls now and then) =="
        fi
      done
      if [ "${rows[-1]##*,}" = yes ]; then
        [ "$n" -le "$best_n" ] || best_n=$n
      elif [ -z "${PIN_ROOMS:-}" ]; then
        break  # the ramp ends at a row that missed every attempt; a PIN_ROOMS list runs all
      fi
    done
    best+=("$pin_scene: $best_n rooms x $players clients meet the goal on one core (the largest row that did)")
  done
  mkdir -p "$(dirname "$csv")"
  {
    echo "$pin_header"
    printf '%s\n' "${rows[@]}"
  } >"$csv"
  echo "== $csv ($model) =="
  column -s, -t "$csv" 2>/dev/null || cat "$csv"
  printf '== %s\n' "${best[@]}"
  exit 0
fi

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

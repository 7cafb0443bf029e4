#!/usr/bin/env bash
# The README's first command: the service end to end on this machine.
#   1. install what is missing (scripts/setup.sh) and build (preset default);
#   2. start lockstep-server on 127.0.0.1 on a free port (the `inputs` scene, 60 Hz);
#   3. run 4 lockstep-bots in room "default" for 10 s, in parallel: each sends seeded inputs for
#      its bodies every tick and verifies every tick's state hash against the server's;
#   4. stop the server with SIGINT and print a summary: ticks, desyncs, per-client bandwidth,
#      p50/p99 tick lateness (from the server's `summary {json}` line).
# Exit 0 only when every bot verified its ticks with no desync and no error. Every process it
# starts is stopped on any failure or interrupt.
# Environment: DEMO_SECONDS (10), DEMO_BOTS (4), DEMO_PRESET (default); DEMO_BUILD_DIR=DIR uses
# an already configured build tree instead of the preset's. DEMO_SCENE=NAME runs scenes/NAME.scene
# (or the built-in scene NAME) instead of `inputs`; DEMO_SCENE=sumo plays the sumo example game:
# the server runs its rules (a fallen ball respawns, its pusher scores), the bots play
# `--game sumo` (each steers towards its nearest opponent) and the scores are printed at the end.
# DEMO_SCENE=koth plays king of the hill: the server runs its rules, the bots (`--game koth`) race
# for the hill and push whoever holds it. Every bot reports the game state (scores and the scene's
# `state` fields) as its verified world had it at the same tick (2 s before the end; half-way for
# runs under 5 s); the demo
# prints it per player and fails unless every bot reports the same, and the same as
# `lockstep-replay state` computes by re-simulating the server's recording of the match.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${DEMO_SECONDS:-10}
bots=${DEMO_BOTS:-4}
preset=${DEMO_PRESET:-default}
scene=${DEMO_SCENE:-}

bash scripts/setup.sh
if [ -n "${DEMO_BUILD_DIR:-}" ]; then
  cmake --build "$DEMO_BUILD_DIR" -j "$(nproc)" --target lockstep-server lockstep-bot lockstep-replay
  bin="$(cd "$DEMO_BUILD_DIR" && pwd)/apps"
else
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$(nproc)" --target lockstep-server lockstep-bot lockstep-replay
  bin="$root/build/$preset/apps"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-demo.XXXXXX")
server_pid=""
bot_pids=()
# shellcheck source=lib/processes.sh
source scripts/lib/processes.sh
trap stop_processes_and_clean_up EXIT
trap 'echo "demo: interrupted" >&2; exit 130' INT TERM

fail() {
  echo "demo: FAILED: $*" >&2
  for f in "$work"/server.log "$work"/bot*.log; do
    [ -s "$f" ] && { echo "--- $(basename "$f") (last lines)" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}

# The scene: a file of scenes/ (served under its stem) or a built-in name; the sumo scene also
# brings its rules and the bots' sumo play.
server_scene=()
bot_scene=()
bot_game=()
if [ -n "$scene" ]; then
  if [ -f "scenes/$scene.scene" ]; then
    server_scene=(--scene "$root/scenes/$scene.scene")
  else
    server_scene=(--scene "$scene")
  fi
  # The bots ask for the scene by name and build their world from the Welcome (no file needed).
  bot_scene=(--scene "$scene")
  if [ "$scene" = koth ]; then
    bot_game=(--game koth --say ready)
  fi
  # sumo_bowl: the same game in a bowl loaded from an OBJ level file; the bots have no copy of
  # the file, the Welcome brings the level.
  if [ "$scene" = sumo ] || [ "$scene" = sumo_bowl ]; then
    bot_game=(--game sumo)
    # Servers that pick rules by flag get them named; others read the scene's `rules` line.
    if "$bin/lockstep-server" --help 2>/dev/null | grep -q -- '--rules'; then
      server_scene+=(--rules sumo)
    fi
  fi
fi

# Port 0: the kernel picks a free port and the server prints `listening port=N`.
start_server_process "$work/server.out" "$work/server.log" \
  "$bin/lockstep-server" --bind 127.0.0.1 --port 0 --log-level warn --replay-dir "$work/replays" \
  --record-matches "${server_scene[@]}"
echo "== lockstep-server on 127.0.0.1:$port (scene ${scene:-inputs});" \
  "$bots lockstep-bots in room \"default\" for ${seconds} s =="

# The tick every bot reports its game state at (60 Hz: the server's default rate).
state_tick=$(( seconds > 4 ? (seconds - 2) * 60 : (seconds * 60 + 1) / 2 ))
[ "$state_tick" -ge 1 ] || state_tick=1
for b in $(seq 1 "$bots"); do
  # timeout: a bot that never finishes is a failure, not a hang (15 s join limit + margin).
  timeout --signal=INT --kill-after=5 $((seconds + 30)) \
    "$bin/lockstep-bot" --host 127.0.0.1 --port "$port" --room default --name "bot$b" \
    --seed "$b" --seconds "$seconds" --state-tick "$state_tick" "${bot_scene[@]}" "${bot_game[@]}" \
    >"$work/bot$b.out" 2>"$work/bot$b.log" &
  bot_pids+=($!)
done

failed_bots=0
for b in $(seq 1 "$bots"); do
  if ! wait "${bot_pids[$((b - 1))]}"; then failed_bots=$((failed_bots + 1)); fi
done
bot_pids=()

# Graceful stop: SIGINT → Disconnect to clients, summary line, exit 0.
kill -INT "$server_pid"
server_rc=0
for _ in $(seq 100); do
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$server_pid" 2>/dev/null; then
  kill -KILL "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  fail "lockstep-server did not stop within 10 s of SIGINT"
fi
wait "$server_pid" || server_rc=$?
server_pid=""

# ---- summary ------------------------------------------------------------------------------
field() {  # field NAME LINE: the value of "key=value" in a bot's summary line
  sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"
}
json_number() {  # json_number KEY JSON: the first "KEY":number in the summary JSON
  grep -o "\"$1\":[-0-9.]*" <<<"$2" | head -n 1 | cut -d: -f2
}

total_ticks=0
total_desyncs=0
total_errors=0
echo
echo "client   ticks verified  desyncs  rtt p50 (ms)  in (B/s)   out (B/s)  errors"
for b in $(seq 1 "$bots"); do
  line=$(grep '^ticks_verified=' "$work/bot$b.out" || true)
  if [ -z "$line" ]; then
    echo "bot$b    (no summary line)"
    total_errors=$((total_errors + 1))
    continue
  fi
  ticks=$(field ticks_verified "$line")
  desyncs=$(field desyncs "$line")
  errors=$(field errors "$line")
  printf '%-8s %14s %8s %13s %9s %11s %7s\n' "bot$b" "$ticks" "$desyncs" \
    "$(field rtt_ms_p50 "$line")" "$(field bytes_in_per_s "$line")" \
    "$(field bytes_out_per_s "$line")" "$errors"
  total_ticks=$((total_ticks + ticks))
  total_desyncs=$((total_desyncs + desyncs))
  total_errors=$((total_errors + errors))
done

summary=$(sed -n 's/^summary //p' "$work/server.out")
[ -n "$summary" ] || fail "lockstep-server printed no summary line (exit status $server_rc)"
room_json=$(grep -o '"rooms":\[.*' <<<"$summary")
echo
echo "server: room default: $(json_number ticks "$room_json") ticks," \
  "$(json_number late_ticks "$room_json") late (> 2 ms)," \
  "tick lateness p50 $(json_number lateness_p50_us "$room_json") µs," \
  "p99 $(json_number lateness_p99_us "$room_json") µs," \
  "max $(json_number lateness_max_us "$room_json") µs;" \
  "inputs accepted $(json_number inputs_accepted "$room_json")," \
  "late $(json_number inputs_late "$room_json")," \
  "rejected $(json_number inputs_rejected "$room_json");" \
  "desync reports $(json_number desync_reports "$summary")"
# Per client, as the server counted it (bytes it sent to each client per connected second).
grep -o '"player":[0-9]*,"name":"[^"]*","mode":"[a-z]*","connected":[a-z]*,"seconds":[0-9.]*,"bytes_in":[0-9]*,"bytes_out":[0-9]*,"bytes_out_per_s":[0-9]*' \
  <<<"$summary" | while read -r client; do
  name=$(sed -n 's/.*"name":"\([^"]*\)".*/\1/p' <<<"$client")
  echo "server → $name: $(json_number bytes_out_per_s "$client") B/s" \
    "($(json_number bytes_out "$client") B in $(json_number seconds "$client") s)"
done

# Sumo: the scores as the bot that saw the latest tick had them in its verified world (every
# bot's world holds every player's score; they differ only by the ticks they stopped at).
if [ "$scene" = sumo ]; then
  best_tick=-1
  best_scores=""
  best_bot=""
  for b in $(seq 1 "$bots"); do
    line=$(grep '^ticks_verified=' "$work/bot$b.out" || true)
    [ -n "$line" ] || continue
    tick=$(field tick "$line")
    if [ "${tick:-0}" -gt "$best_tick" ]; then
      best_tick=$tick
      best_scores=$(field scores "$line")
      best_bot="bot$b (player $(field player "$line"))"
    fi
  done
  echo
  echo "sumo scores at tick $best_tick, from the world of $best_bot:"
  tr ',' '\n' <<<"$best_scores" | while IFS=: read -r player points; do
    if [ -n "$points" ]; then printf '  player %-3s %s\n' "$player" "$points"; fi
  done
fi

# Game state at $state_tick: the same in every bot's verified world, or the demo fails.
states=""
first_state=""
for b in $(seq 1 "$bots"); do
  line=$(grep '^ticks_verified=' "$work/bot$b.out" || true)
  [ -n "$line" ] || continue
  state=$(field state "$line")
  [ -n "$first_state" ] || first_state=$state
  states+="bot$b $state"$'\n'
  if [ "$state" != "$first_state" ]; then
    printf '%s' "$states" >&2
    fail "bot$b reports game state '$state' at tick $state_tick, bot1 '$first_state'"
  fi
done
echo
echo "game state at tick $state_tick, the same in all $bots bots' verified worlds:"
tr ';' '\n' <<<"$first_state" | while IFS='=' read -r name values; do
  [ -n "$name" ] || continue
  if [[ "$values" == *:* ]]; then
    tr ',' '\n' <<<"$values" | while IFS=: read -r player value; do
      printf '  player %-3s %-14s %s\n' "$player" "$name" "$value"
    done
  else
    printf '  room       %-14s %s\n' "$name" "$values"
  fi
done

# The server's recording of the match, re-simulated to the same tick, must say the same.
recording=$(find "$work/replays" -name 'match-*.lsrp' 2>/dev/null | head -n 1)
[ -n "$recording" ] || fail "the server wrote no match recording in $work/replays"
replayed=$("$bin/lockstep-replay" state "$recording" --tick "$state_tick" | sed -n 's/.* state=//p')
[ "$replayed" = "$first_state" ] ||
  fail "a re-run of the server's recording gives '$replayed' at tick $state_tick, the bots '$first_state'"
echo "  (the same as a re-run of the server's recording, $(basename "$recording"))"

server_desyncs=$(json_number desync_reports "$summary")
echo
if [ "$failed_bots" -ne 0 ] || [ "$total_desyncs" -ne 0 ] || [ "$total_errors" -ne 0 ] ||
   [ "$server_rc" -ne 0 ] || [ "${server_desyncs:-0}" -ne 0 ] || [ "$total_ticks" -eq 0 ]; then
  fail "$failed_bots bot(s) failed, $total_desyncs desync(s), $total_errors error(s)," \
       "server exit $server_rc, ${server_desyncs:-?} desync report(s)"
fi
echo "demo: OK — $bots bots, $total_ticks ticks verified, 0 desyncs, 0 errors"

#!/usr/bin/env bash
# scripts/server-load.sh --scene: the name reaches the server, which refuses one it does not know
# before any client connects (the script fails at once, with the server's reason), and the CSV's
# scene column is what the server says its rooms ran, in the lockstep-load rows and the bot row;
# --pin runs both scenes on a core each and writes the pinned table.
# Usage: server_load_test.sh SOURCE_DIR BUILD_DIR (BUILD_DIR holds apps/lockstep-server,
# apps/lockstep-bot and bench/lockstep-load, already built).
set -euo pipefail
source_dir=$(realpath "$1")
build_dir=$(realpath "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-server-load.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  for log in "$work"/*.log; do
    [ -f "$log" ] && { echo "---- $log" >&2; tail -n 30 "$log" >&2; }
  done
  exit 1
}
for bin in apps/lockstep-server apps/lockstep-bot bench/lockstep-load; do
  [ -x "$build_dir/$bin" ] || fail "$build_dir/$bin is not built"
done
run_load() {  # ARGS... → exit status; output in $work/run.log, CSV in $work/load.csv
  # The script stops its own children on exit; the outer timeout only bounds a hang.
  LOAD_NO_BUILD=1 BUILD_DIR="$build_dir" LOAD_CSV="$work/load.csv" \
    timeout --kill-after=10 150 bash "$source_dir/scripts/server-load.sh" "$@" >"$work/run.log" 2>&1
}

# 1. An unknown name: the server does not start, the script says why and writes no CSV.
status=0
LOAD_ROOMS=1 BOT_ROOMS=0 LOAD_SECONDS=1 run_load --scene no-such-scene || status=$?
[ "$status" = 1 ] || fail "server-load exited $status on an unknown scene, not 1"
grep -q "lockstep-server exited at start" "$work/run.log" || fail "no start failure reported"
grep -q "unknown scene 'no-such-scene'" "$work/run.log" || fail "the server's reason is not shown"
[ ! -e "$work/load.csv" ] || fail "a CSV was written for a run that never started"
echo "unknown scene refused: $(grep -o "unknown scene 'no-such-scene'[^(]*" "$work/run.log")"

# 2. A built-in scene that is not the server's default: every row ran it, by the server's summary.
LOAD_ROOMS=2 LOAD_SECONDS=2 BOT_ROOMS=1 BOT_SECONDS=2 run_load --scene bounce ||
  fail "server-load --scene bounce failed"
python3 - "$work/load.csv" <<'EOF' || fail "the CSV does not show scene bounce in every row"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
kinds = [r["client"] for r in rows]
assert kinds == ["load", "bot"], f"rows {kinds}, expected one load row and one bot row"
scenes = [r["scene"] for r in rows]
assert scenes == ["bounce", "bounce"], f"scene column {scenes}"
print("rows:", ", ".join(f"{r['client']} {r['rooms']} rooms scene {r['scene']} "
                          f"{r['ticks_per_room_per_s']} ticks/s" for r in rows))
EOF

# 3. No --scene: the server's default (`inputs`, the demo) is what the column says.
LOAD_ROOMS=1 LOAD_SECONDS=1 BOT_ROOMS=0 run_load || fail "server-load without --scene failed"
default_scene=$(python3 -c "import csv,sys; print(next(csv.DictReader(open(sys.argv[1])))['scene'])" \
  "$work/load.csv")
[ "$default_scene" = inputs ] || fail "default run's scene column is '$default_scene', not inputs"
echo "default scene: $default_scene"

# 4. --pin: the server and the generator on a core each, both scenes, the pinned table's CSV. One
# short row per scene; whether a row meets the goal depends on the machine, so only the shape of
# the answer is checked, never a figure.
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  PIN_ROOMS=2 PIN_WARMUP=1 PIN_RETRIES=0 LOAD_SECONDS=1 run_load --pin || fail "server-load --pin failed"
  grep -q "^== pinned: server on core 0, lockstep-load on core 1" "$work/run.log" ||
    fail "--pin did not say where it ran"
  grep -q "^== inputs: .* rooms x 4 clients meet the goal on one core" "$work/run.log" ||
    fail "--pin printed no verdict for inputs"
  python3 - "$work/load.csv" <<'PY' || fail "the pinned CSV is not what --pin promises"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["scene"] for r in rows] == ["inputs", "bounce"], [r["scene"] for r in rows]
for r in rows:
    assert r["rooms"] == "2" and r["clients"] == "8", r
    assert r["meets_goal"] in ("yes", "no"), r
    for column in ("cpu_ms_per_room_s", "step_ms_per_room_s", "rest_ms_per_room_s",
                   "kernel_percent", "step_cpu_us", "wakeups_per_room_tick", "p99_lateness_us"):
        float(r[column])
    # The step's share is the server's own per-thread clock: a real step costs something.
    assert float(r["step_cpu_us"]) > 0, r
print("pinned rows:", ", ".join(f"{r['scene']} {r['rooms']} rooms: {r['cpu_ms_per_room_s']} ms "
                                f"CPU per room-second, goal {r['meets_goal']}" for r in rows))
PY
  status=0
  PIN_ROOMS=1 LOAD_SECONDS=1 run_load --pin --threads 2 || status=$?
  [ "$status" = 2 ] || fail "--pin --threads 2 exited $status, not 2"
else
  echo "--pin skipped: it needs 2 cores and taskset"
fi

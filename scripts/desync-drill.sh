#!/usr/bin/env bash
# The desync drill: a broken client from start to found cause, the way it happens in production.
#
#   bash scripts/desync-drill.sh BUILD_DIR
#
# 1. builds a deliberately non-deterministic lockstep-bot (the test-only CMake variable
#    LOCKSTEP_INJECT_NONDETERMINISM: FMA contraction on, -march=x86-64-v3) in a build tree of its
#    own, only the targets lockstep-bot needs, at -O2 without debug information;
# 2. runs BUILD_DIR's lockstep-server with a replay directory, BUILD_DIR's lockstep-bot (honest)
#    and the broken bot with --replay-dir in one room;
# 3. checks that the server logged the desync and wrote its replay, that the broken bot gave up
#    with the diagnosis (exit 1) instead of resyncing in a loop, and that the honest bot played
#    on without a desync (exit 0);
# 4. runs `lockstep-replay diff SERVER_FILE CLIENT_FILE` and `lockstep-replay view`, prints the
#    first divergent tick, body and field and where the page is, and fails unless the diff names
#    a tick no later than the one the server logged.
#
# BUILD_DIR must hold apps/lockstep-server, apps/lockstep-bot and apps/lockstep-replay (e.g.
# build/ci). Exit 0: the drill passed; 1: a check failed (the reason and the logs on stderr);
# 2: a bad command line or BUILD_DIR without the tools.
# Environment: DRILL_INJECT_DIR (build tree of the broken bot, default build/desync-drill),
# DRILL_OUT_DIR (replays, logs and the page; default DRILL_INJECT_DIR/run, kept after the run),
# DRILL_INJECT_FLAGS (default "-ffp-contract=fast -march=x86-64-v3" on x86-64,
# "-ffp-contract=fast" elsewhere), DRILL_SECONDS (how long the honest bot plays, 5), DRILL_JOBS (2),
# DRILL_BUILD_ONLY=1 (build the broken bot and stop: scripts/test.sh builds it in the background).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: bash scripts/desync-drill.sh BUILD_DIR   (a build tree with lockstep-server," \
    "lockstep-bot and lockstep-replay, e.g. build/ci)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
for tool in lockstep-server lockstep-bot lockstep-replay; do
  if [ ! -x "$build/apps/$tool" ]; then
    echo "desync-drill: $build/apps/$tool is missing: cmake --build $1 --target lockstep-server" \
      "lockstep-bot lockstep-replay" >&2
    exit 2
  fi
done
inject_dir=${DRILL_INJECT_DIR:-$root/build/desync-drill}
out=${DRILL_OUT_DIR:-$inject_dir/run}
# Paths under the current folder are printed (and given to the tools) relative to it.
mkdir -p "$inject_dir" "$out"
inject_dir=$(realpath -s --relative-base="$PWD" "$inject_dir")
out=$(realpath -s --relative-base="$PWD" "$out")
seconds=${DRILL_SECONDS:-5}
jobs=${DRILL_JOBS:-2}
if [ -z "${DRILL_INJECT_FLAGS:-}" ]; then
  case $(uname -m) in
  x86_64 | amd64) DRILL_INJECT_FLAGS="-ffp-contract=fast -march=x86-64-v3" ;;
  *) DRILL_INJECT_FLAGS="-ffp-contract=fast" ;;
  esac
fi

server_pid=""
bot_pids=()
stop_processes() {
  local pid
  for pid in "${bot_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
}
trap stop_processes EXIT
trap 'echo "desync-drill: interrupted" >&2; exit 130' INT TERM

fail() {
  echo "desync-drill: FAILED: $*" >&2
  for f in "$out"/server.log "$out"/honest.log "$out"/broken.log "$out"/diff.txt; do
    [ -s "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}
now_ns() { date +%s%N; }
seconds_since() { awk -v ns=$(($(now_ns) - $1)) 'BEGIN { printf "%.1f", ns / 1e9 }'; }

# ---- 1. the broken client --------------------------------------------------------------------
drill_start=$(now_ns)
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
echo "== building a deliberately non-deterministic lockstep-bot ($DRILL_INJECT_FLAGS) in $inject_dir"
build_start=$(now_ns)
# Only what lockstep-bot links (sim, schema, replays, client_sdk): no tests, no benchmarks, -O2
# without -g, the libraries around the sim as unity builds (the sim stays file by file).
if ! {
  cmake -S "$root" -B "$inject_dir" -G Ninja "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
    -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_BUILD_BENCHMARKS=OFF -DCMAKE_UNITY_BUILD=ON \
    -DLOCKSTEP_INJECT_NONDETERMINISM="$DRILL_INJECT_FLAGS" &&
    cmake --build "$inject_dir" --target lockstep-bot -j "$jobs"
} >"$inject_dir/build.log" 2>&1; then
  tail -n 30 "$inject_dir/build.log" >&2
  fail "the injected build failed (log: $inject_dir/build.log)"
fi
echo "built in $(seconds_since "$build_start") s"
if [ "${DRILL_BUILD_ONLY:-0}" = 1 ]; then exit 0; fi

# ---- 2. the match ----------------------------------------------------------------------------
rm -rf "$out"
mkdir -p "$out/server" "$out/client"
# The file exists before the server starts: the poll below must not race its redirection.
: >"$out/server.out"
"$build/apps/lockstep-server" --bind 127.0.0.1 --port 0 --log-level warn \
  --replay-dir "$out/server" >"$out/server.out" 2>"$out/server.log" &
server_pid=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/^listening port=\([0-9][0-9]*\)$/\1/p' "$out/server.out")
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || fail "lockstep-server exited at start"
  sleep 0.1
done
[ -n "$port" ] || fail "lockstep-server did not report its port within 10 s"
echo "== lockstep-server on 127.0.0.1:$port; an honest bot and the broken bot in room \"default\""

# timeout: a bot that never finishes is a failure, not a hang (15-s join limit + margin).
timeout --signal=INT --kill-after=5 $((seconds + 30)) \
  "$build/apps/lockstep-bot" --port "$port" --name honest --seed 1 --seconds "$seconds" \
  >"$out/honest.out" 2>"$out/honest.log" &
bot_pids+=($!)
timeout --signal=INT --kill-after=5 $((seconds + 30)) \
  "$inject_dir/apps/lockstep-bot" --port "$port" --name broken --seed 2 --seconds "$seconds" \
  --replay-dir "$out/client" >"$out/broken.out" 2>"$out/broken.log" &
bot_pids+=($!)
broken_rc=0
wait "${bot_pids[1]}" || broken_rc=$?
honest_rc=0
wait "${bot_pids[0]}" || honest_rc=$?
bot_pids=()

kill -INT "$server_pid"
for _ in $(seq 100); do
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$server_pid" 2>/dev/null && fail "lockstep-server did not stop within 10 s of SIGINT"
wait "$server_pid" || fail "lockstep-server exited with an error"
server_pid=""

# ---- 3. what each side said ------------------------------------------------------------------
server_tick=$(sed -n "s/.*'broken' reports a desync at tick \([0-9][0-9]*\).*/\1/p" \
  "$out/server.log" | head -n 1)
[ -n "$server_tick" ] || fail "the server logged no desync of the broken bot"
server_file=$(find "$out/server" -name 'desync-*.lsrp' | sort | head -n 1)
[ -n "$server_file" ] || fail "the server wrote no desync replay"
echo "server: a desync reported at tick $server_tick; replay $server_file"

honest=$(grep '^ticks_verified=' "$out/honest.out" || true)
[ "$honest_rc" -eq 0 ] || fail "the honest bot exited $honest_rc: $honest"
broken=$(grep '^ticks_verified=' "$out/broken.out" || true)
[ "$broken_rc" -eq 1 ] || fail "the broken bot exited $broken_rc, not 1: $broken"
diagnosis=$(sed -n 's/.* error="\(.*\)"$/\1/p' <<<"$broken")
grep -q "not deterministic with the server's" <<<"$diagnosis" ||
  fail "the broken bot's summary has no diagnosis: $broken"
resyncs=$(sed -n 's/.* resyncs=\([0-9]*\).*/\1/p' <<<"$broken")
echo "broken client: exit 1 after $resyncs resyncs: $diagnosis"
client_file=$(sed -n 's/.*replay written to \([^ ]*\.lsrp\).*/\1/p' <<<"$diagnosis")
if [ -z "$client_file" ] || [ ! -f "$client_file" ]; then
  fail "the diagnosis names no replay file that exists: $diagnosis"
fi

# ---- 4. the cause ----------------------------------------------------------------------------
diff_rc=0
"$build/apps/lockstep-replay" diff "$server_file" "$client_file" >"$out/diff.txt" 2>&1 ||
  diff_rc=$?
[ "$diff_rc" -eq 1 ] || fail "lockstep-replay diff exited $diff_rc, not 1 (diverged)"
diff_tick=$(sed -n 's/^first divergent tick: \([0-9][0-9]*\)$/\1/p' "$out/diff.txt")
first_field=$(grep -m 1 '^body ' "$out/diff.txt" || true)
fields=$(grep -c '^body ' "$out/diff.txt" || true)
if grep -q '^(stopped at' "$out/diff.txt"; then fields="$fields+"; fi
[ -n "$diff_tick" ] || fail "diff named no divergent tick"
[ -n "$first_field" ] || fail "diff named no body and field"
[ "$diff_tick" -le "$server_tick" ] ||
  fail "diff names tick $diff_tick, after the tick the server logged ($server_tick)"
page="$out/desync.html"
"$build/apps/lockstep-replay" view "$server_file" --against "$client_file" -o "$page" \
  >"$out/view.txt" 2>&1 || fail "lockstep-replay view failed: $(cat "$out/view.txt")"
echo "diff: first divergent tick $diff_tick ($(sed -n 's/^compared tick: .*(\(.*\))$/\1/p' \
  "$out/diff.txt"))"
echo "diff: $first_field  ($fields differing fields in $out/diff.txt)"
echo "view: $page"
echo "desync drill: PASS in $(seconds_since "$drill_start") s (first divergent tick $diff_tick <=" \
  "server's $server_tick)"

#!/usr/bin/env bash
# Builds lockstep and runs its tests: the README's second command, and what .ci/run runs.
#
#   scripts/test.sh          the change check, sized for CI's budget (docs/ci.md: 25 minutes
#                            on two idle cores): everything that can catch a regression in a change
#   scripts/test.sh --full   the release check: all of the change check, plus the whole
#                            determinism matrix over the full golden chains, every test under
#                            ASan+UBSan, the 10-minute soak and 5-minute fuzz runs (docs/ci.md)
#
# The change check, stage by stage (docs/ci.md has each stage's time and what --full adds):
#   ci      the ci preset (-Werror) and every ctest label: unit, determinism (the golden chains and
#           golden replays at gcc -O2), physics, net, ops, browser, source, package
#   drill   the desync drill: a bot built with FMA contraction caught and diagnosed
#   soak    the 1-minute soak of the service, beside the sanitizer build
#   asan    ASan+UBSan (clang 14) over the tests that read untrusted bytes, the net paths and the
#           solver; the same build has the libFuzzer harnesses
#   fuzz    every libFuzzer target for 10 s from the committed corpus, from the asan build
#   matrix  the representative determinism targets: x86-64 clang -O3, i686, aarch64, wasm32 and
#           Windows x86-64 under wine (its build also runs the C API's suite through the DLL),
#           built and run in the background from the end of the ci build; the emulated targets
#           compare the first 600 ticks of each golden chain (a prefix another chain checks in
#           full is not run twice), every target every golden replay in full
#   windows the Windows build of the C API's client joins a server of the ci build under wine
#           and verifies 10 s of ticks (scripts/windows-client-check.sh)
#
# Knobs for a developer (CI sets none of them):
#   LOCKSTEP_SKIP_{ASAN,MATRIX,FUZZ,SOAK}=1   skip that stage
#   LOCKSTEP_FUZZ_SECONDS=N, LOCKSTEP_SOAK_MINUTES=N, LOCKSTEP_MATRIX_SLOW_TICKS=N|full
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

full=0
case "${1:-}" in
"") ;;
--full) full=1 ;;
-h | --help)
  sed -n '2,28p' "$0"
  exit 0
  ;;
*)
  echo "test.sh: unknown argument '$1' (scripts/test.sh [--full])" >&2
  exit 2
  ;;
esac

start=$(date +%s)
jobs=$(nproc)
# Builds run two more jobs than there are cores, as ninja does by default: a compile also waits
# on the disk and the linker on one file, and beside busy processes of the same session the
# extra jobs keep the build's share. Tests run one more than there are cores: the net tests spend
# much of their time waiting on real clients and timers (the ci tests kept two idle cores about
# two thirds busy at one per core), and they are written to pass on a busy machine.
build_jobs=$((jobs + 2))
test_jobs=$((jobs + 1))

if [ $full = 1 ]; then
  fuzz_seconds=${LOCKSTEP_FUZZ_SECONDS:-300}
  soak_minutes=${LOCKSTEP_SOAK_MINUTES:-10}
  slow_ticks=${LOCKSTEP_MATRIX_SLOW_TICKS:-full}
  sanitized_tests=all
else
  fuzz_seconds=${LOCKSTEP_FUZZ_SECONDS:-10}
  soak_minutes=${LOCKSTEP_SOAK_MINUTES:-1}
  slow_ticks=${LOCKSTEP_MATRIX_SLOW_TICKS:-600}
  sanitized_tests=subset
fi

# Each stage's wall time, printed as a table at the end (the figures docs/ci.md quotes).
stage_names=()
stage_seconds=()
stage_start=0
begin_stage() {
  echo "== $1 =="
  stage_names+=("$1")
  stage_start=$(date +%s)
}
end_stage() {
  stage_seconds+=($(($(date +%s) - stage_start)))
  echo "-- ${stage_names[-1]}: ${stage_seconds[-1]} s"
}
print_stages() {
  echo "test.sh: stage times (s)"
  local i
  for i in "${!stage_seconds[@]}"; do
    printf '  %-44s %6s\n' "${stage_names[$i]}" "${stage_seconds[$i]}"
  done
}

begin_stage "setup"
bash scripts/setup.sh
end_stage

begin_stage "build, preset ci (RelWithDebInfo, -Werror)"
cmake --preset ci
cmake --build --preset ci -j "$build_jobs"
# The browser client's wasm core (emscripten), for the browser label's web_browser test.
bash scripts/build-web.sh
end_stage

# The determinism matrix (its builds and its runs) starts now in the background at the lowest
# priority, the drill's bot (below) at a low one: they take only the CPU that the stages in front
# leave idle (the net tests wait on real clients, a third of the cores on two idle ones; the asan
# build ends in serial links), so those run as if alone. Their stages raise them to normal
# priority and wait for them. Logs: build/background-*.log.
declare -A background_pid=()
start_background() {
  local name=$1 niceness=$2
  shift 2
  mkdir -p build
  nice -n "$niceness" "$@" >"build/background-$name.log" 2>&1 &
  background_pid[$name]=$!
}
# renice_tree PID: PID and every process below it back to priority 0, parents first, so that
# what ninja starts afterwards inherits it. Only root may raise a priority: elsewhere the
# background build finishes at its own pace.
renice_tree() {
  local child
  renice -n 0 -p "$1" >/dev/null 2>&1 || return 0
  for child in $(ps -o pid= --ppid "$1"); do renice_tree "$child"; done
}
finish_background() {
  local pid=${background_pid[$1]:-}
  [ -n "$pid" ] || return 0
  renice_tree "$pid"
  wait "$pid" || echo "test.sh: the background $1 build failed; building again to report it"
  unset "background_pid[$1]"
}
# On a failure (set -e) nothing is left running behind the script.
kill_tree() {
  local child
  for child in $(ps -o pid= --ppid "$1"); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
stop_background() {
  local name
  for name in "${!background_pid[@]}"; do kill_tree "${background_pid[$name]}"; done
  [ -z "${soak_pid:-}" ] || kill_tree "$soak_pid"
}
trap stop_background EXIT
matrix_args=(--jobs "$build_jobs" --slow-ticks "$slow_ticks")
if [ $full = 1 ]; then matrix_args+=(--inject-nondeterminism); else matrix_args+=(--representative); fi
if [ "${LOCKSTEP_SKIP_MATRIX:-0}" != 1 ]; then
  # The whole matrix, builds and runs: its runs too take only the CPU the stages before it leave
  # (the serial links at the end of the asan build, the net tests' waits).
  matrix_begin=$(date +%s)
  start_background matrix 19 bash scripts/determinism-matrix.sh "${matrix_args[@]}"
fi

# The desync drill's deliberately broken bot, needed first (right after the ci tests): ahead of
# the other background builds, still far behind the tests.
drill_env=(env DRILL_INJECT_DIR="$root/build/ci/desync-drill")
start_background drill 10 "${drill_env[@]}" DRILL_BUILD_ONLY=1 bash scripts/desync-drill.sh build/ci

begin_stage "test, preset ci (every label)"
ctest --preset ci -j "$test_jobs" -LE drill
end_stage
begin_stage "desync drill (a broken client to its found cause)"
finish_background drill
ctest --preset ci -L drill
end_stage

# The soak runs beside the sanitizer build (it needs only the ci build's binaries, and its
# criteria hold on a busy machine: docs/security.md, "Soak"); its output is shown when it ends.
soak_pid=""
soak_log=build/soak.log
if [ "${LOCKSTEP_SKIP_SOAK:-0}" != 1 ]; then
  # A token-protected server under honest bots and hostile connections: honest bots never
  # desync, RSS stays flat, no room stalls, every hostile connection is counted.
  echo "== soak ($soak_minutes min), in the background =="
  soak_begin=$(date +%s)
  bash scripts/soak.sh "$soak_minutes" build/ci >"$soak_log" 2>&1 &
  soak_pid=$!
fi
finish_soak() {
  [ -n "$soak_pid" ] || return 0
  local rc=0
  wait "$soak_pid" || rc=$?
  stage_names+=("soak ($soak_minutes min, beside the asan build)")
  # Its own length: from its start to its log's last write (the build may have ended later).
  stage_seconds+=($(($(stat -c %Y "$soak_log") - soak_begin)))
  echo "-- ${stage_names[-1]}: ${stage_seconds[-1]} s"
  soak_pid=""
  echo "== soak output =="
  cat "$soak_log"
  if [ $rc -ne 0 ]; then
    echo "test.sh: the soak failed (exit $rc)" >&2
    exit 1
  fi
}

if [ "${LOCKSTEP_SKIP_ASAN:-0}" != 1 ]; then
  begin_stage "build, preset asan ($sanitized_tests of the tests)"
  # subset: tests/CMakeLists.txt builds only the suites marked SANITIZE (untrusted bytes, net
  # paths, the solver); all: every suite, as the ci pass has them.
  cmake --preset asan -DLOCKSTEP_SANITIZED_TESTS="$sanitized_tests"
  cmake --build --preset asan -j "$build_jobs"
  end_stage
  finish_soak
  begin_stage "test, preset asan"
  # Left out under the sanitizers, all run in the ci pass above: slow (the golden chains, which
  # the matrix also runs); browser (the viewer page in chromium: the page, not C++ memory);
  # source and package (they read the sources or build the examples again); gtest cases named
  # Slow* (long scenes whose code shorter cases run here); the 1- and 2-tick sync tests (the
  # 7-tick ones run the same rollback code through a deeper ring).
  ctest --preset asan -j "$test_jobs" -LE 'slow|browser|source|package' -E '(\.Slow|^synctest_.*_k[12]$)'
  end_stage
fi
finish_soak

if [ "${LOCKSTEP_SKIP_FUZZ:-0}" != 1 ]; then
  # Every libFuzzer target from the committed seeds; a finding fails the run (docs/security.md).
  # The asan preset is a clang build with the harnesses in it, so they are built already; without
  # it, scripts/fuzz.sh builds its own (build/fuzz).
  fuzz_build=build/asan
  [ "${LOCKSTEP_SKIP_ASAN:-0}" != 1 ] || fuzz_build=build/fuzz
  begin_stage "fuzz (clang-14 libFuzzer + ASan/UBSan, $fuzz_seconds s a target)"
  LOCKSTEP_FUZZ_BUILD=$fuzz_build LOCKSTEP_FUZZ_JOBS=${LOCKSTEP_FUZZ_JOBS:-$build_jobs} \
    bash scripts/fuzz.sh all "$fuzz_seconds"
  end_stage
fi

if [ "${LOCKSTEP_SKIP_MATRIX:-0}" != 1 ]; then
  begin_stage "cross-platform determinism matrix"
  # As many targets built side by side, each with one compile job, and then as many runs, as the
  # builds above have jobs. The change check builds the representative set; --full every target.
  # Started after the ci build (above); here raised to normal priority and waited for. Its table,
  # or its failure, is in its log.
  matrix_rc=0
  renice_tree "${background_pid[matrix]}"
  wait "${background_pid[matrix]}" || matrix_rc=$?
  unset "background_pid[matrix]"
  cat build/background-matrix.log
  end_stage
  stage_names+=("  (the matrix from its start in the background)")
  stage_seconds+=($(($(stat -c %Y build/background-matrix.log) - matrix_begin)))
  if [ $matrix_rc -ne 0 ]; then
    echo "test.sh: the determinism matrix failed (exit $matrix_rc)" >&2
    exit 1
  fi
fi

if [ "${LOCKSTEP_SKIP_MATRIX:-0}" != 1 ]; then
  # The matrix built the Windows target (lockstep_c.dll and its C suite): that program joins a
  # server of the ci build from wine and must verify 10 s of ticks with no desync.
  begin_stage "Windows client (wine) against the Linux server, 10 s"
  bash scripts/windows-client-check.sh build/ci
  end_stage
fi

print_stages
if [ $full = 1 ]; then
  echo "test.sh --full: all passed in $(($(date +%s) - start)) s"
else
  echo "test.sh: all passed in $(($(date +%s) - start)) s"
fi

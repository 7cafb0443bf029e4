#!/usr/bin/env bash
# libFuzzer runs of tests/fuzz (docs/security.md).
#   scripts/fuzz.sh [TARGET|all] [SECONDS]   default: all targets, 30 s each; 0 s = build only
#   LOCKSTEP_FUZZ_PARALLEL=N                 targets run N at a time (default: 2, 1 on one core)
#   LOCKSTEP_FUZZ_JOBS=N                     compile jobs for the build (default 2; test.sh: cores + 2)
#   LOCKSTEP_FUZZ_BUILD=DIR                  the build to use (default build/fuzz); test.sh passes
#                                            build/asan, the asan preset, which has the harnesses
# Builds build/fuzz with Debian's clang-14 (-fsanitize=fuzzer,address,undefined), starts from the
# committed seeds (tests/fuzz/corpus/TARGET) plus a working corpus in build/fuzz/corpus/TARGET,
# and fails on the first finding (the crashing input is left in build/fuzz/findings/).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-all}
seconds=${2:-30}
build=${LOCKSTEP_FUZZ_BUILD:-build/fuzz}
targets=(fuzz_frame_messages fuzz_replay_file fuzz_scene_text fuzz_snapshot fuzz_level
  fuzz_level_file fuzz_record_file fuzz_server_session fuzz_websocket)
if [[ $target != all ]]; then targets=("$target"); fi

if [[ ! -f $build/build.ninja ]]; then
  # Line tables only (-gline-tables-only): a finding's stack still names file and line.
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" -DLOCKSTEP_FUZZ=ON -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_BUILD_BENCHMARKS=OFF \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
fi
cmake --build "$build" -j"${LOCKSTEP_FUZZ_JOBS:-2}" --target "${targets[@]}"
# libFuzzer reads -max_total_time=0 as "no limit": 0 here means build and stop.
if [[ $seconds == 0 ]]; then exit 0; fi

mkdir -p "$build/findings" "$build/logs"
# One target: its summary lines go to its log; a finding leaves the input in findings/.
fuzz_one() {
  local t=$1
  local dirs=("$build/corpus/$t")
  mkdir -p "${dirs[0]}"
  [[ ! -d tests/fuzz/corpus/$t ]] || dirs+=("tests/fuzz/corpus/$t")
  # -rss_limit_mb: a run that takes more memory than this is a finding (the memory budgets). The
  # stateful server harness holds up to 8 rooms and ASan's quarantine: it checks its own heap
  # bound, and an input may wait seconds for a room on a busy machine.
  local rss=1024 timeout=10
  if [[ $t == fuzz_server_session || $t == fuzz_websocket ]]; then rss=2048 timeout=60; fi
  "$build/tests/fuzz/$t" -max_total_time="$seconds" -rss_limit_mb=$rss -timeout=$timeout \
    -print_final_stats=1 -artifact_prefix="$build/findings/$t-" "${dirs[@]}" 2>&1 |
    grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY|fuzz_server_session:|fuzz_websocket:)' \
      >"$build/logs/$t.log" || true
}

# Targets run `parallel` at a time (default: one per core, at most 2): each still gets its own
# core for its SECONDS, and the stage takes half the time on two cores.
parallel=${LOCKSTEP_FUZZ_PARALLEL:-$(($(nproc) < 2 ? 1 : 2))}
if [[ ! $parallel =~ ^[1-9][0-9]?$ ]]; then
  echo "fuzz: LOCKSTEP_FUZZ_PARALLEL must be a whole number from 1 to 99, not '$parallel'" >&2
  exit 2
fi
found=0
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
  batch=("${targets[@]:i:parallel}")
  for t in "${batch[@]}"; do
    echo "fuzz: $t for ${seconds}s"
    fuzz_one "$t" &
  done
  wait
  for t in "${batch[@]}"; do
    sed "s/^/$t: /" "$build/logs/$t.log"
    if ls "$build/findings/$t-"* >/dev/null 2>&1; then
      echo "fuzz: $t found an input that fails: $(ls "$build/findings/$t-"*)" >&2
      found=1
    fi
  done
  [[ $found == 0 ]] || exit 1
done
echo "fuzz: no findings"

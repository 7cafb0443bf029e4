#!/usr/bin/env bash
# Builds lockstep and runs every test: the README's second command, and what .ci/run runs.
#   scripts/test.sh            install what is missing, build (warnings as errors), run all tests
#   LOCKSTEP_SKIP_ASAN=1 ...   skip the AddressSanitizer/UBSan pass
#   LOCKSTEP_SKIP_MATRIX=1 ... skip the cross-platform determinism matrix
#   LOCKSTEP_SKIP_FUZZ=1 ..... skip the 30-second runs of every fuzz target (scripts/fuzz.sh)
#   LOCKSTEP_SKIP_SOAK=1 ..... skip the 1-minute soak of the service (scripts/soak.sh)
#   (default) ................ the -O0 and emulated (qemu) matrix targets check the first 1,800
#                              ticks of each 3,600-tick golden scene, every other target all of
#                              them, every target both golden replays in full; the table says
#                              `match to 1800` for the shortened ones
#   LOCKSTEP_MATRIX_QUICK=1 .. the slow targets check only the first 600 ticks
#   LOCKSTEP_MATRIX_FULL=1 ... every target checks all 3,600 ticks (~8 minutes more on 2 cores)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
jobs=$(nproc)
# Builds run two more jobs than there are cores, as ninja does by default: a compile also waits
# on the disk and the linker on one file. Busy processes started from the same session as this
# script share the cores with it process by process, and the extra jobs keep the build's share
# (beside two of them, 2 jobs on 2 cores get half the machine, 4 get two thirds). Busy processes
# each in a session of their own get the cores session by session (Linux's autogroups): there,
# two of them leave this script a third of the machine however many jobs it runs
# (docs/determinism.md, "Measured"). Tests stay at one per core: the net tests time real clients.
build_jobs=$((jobs + 2))

bash scripts/setup.sh

echo "== build and test (preset ci: RelWithDebInfo, -Werror) =="
cmake --preset ci
cmake --build --preset ci -j "$build_jobs"
ctest --preset ci -j "$jobs"

if [ "${LOCKSTEP_SKIP_SOAK:-0}" != 1 ]; then
  # A token-protected server under honest bots and hostile connections for a minute: honest
  # bots never desync, RSS stays flat, no room stalls, every hostile connection is counted
  # (docs/security.md, "Soak"; the 10-minute run is `scripts/soak.sh 10`).
  echo "== soak (1 minute) =="
  bash scripts/soak.sh "${LOCKSTEP_SOAK_MINUTES:-1}" build/ci
fi

if [ "${LOCKSTEP_SKIP_ASAN:-0}" != 1 ]; then
  echo "== build and test (preset asan: AddressSanitizer + UndefinedBehaviorSanitizer) =="
  cmake --preset asan
  cmake --build --preset asan -j "$build_jobs"
  # Left out here, all run in the ci pass above: slow, the golden chains (the matrix runs them);
  # browser, the viewer page in chromium (the page, not C++ memory); source and package, the
  # format and lint checks and the install test (they read the sources or build the examples
  # again); gtest cases named Slow*, long scenes whose code shorter cases run here (the 60-s pile:
  # three minutes under ASan on a busy machine); the 2-tick sync tests, between the 1- and 7-tick
  # ones, which cover both ends of the rollback ring.
  ctest --preset asan -j "$jobs" -LE 'slow|browser|source|package' -E '(\.Slow|^synctest_.*_k2$)'
fi

if [ "${LOCKSTEP_SKIP_FUZZ:-0}" != 1 ]; then
  # Every libFuzzer target of tests/fuzz for 30 s from the committed seeds, in a clang build of
  # its own (build/fuzz); a finding fails the run (docs/security.md).
  echo "== fuzz (clang-14 libFuzzer + ASan/UBSan, 30 s per target) =="
  LOCKSTEP_FUZZ_JOBS=${LOCKSTEP_FUZZ_JOBS:-$build_jobs} bash scripts/fuzz.sh all "${LOCKSTEP_FUZZ_SECONDS:-30}"
fi

if [ "${LOCKSTEP_SKIP_MATRIX:-0}" != 1 ] && [ -f scripts/determinism-matrix.sh ]; then
  echo "== cross-platform determinism matrix =="
  # As many targets built side by side, each with one compile job, and then as many runs, as the
  # builds above have jobs.
  matrix_args=(--inject-nondeterminism --jobs "$build_jobs")
  # The slow targets (-O0, aarch64 and i686 under qemu) are nine tenths of the matrix's run time
  # since the SIMD solver (more float operations, free on hardware, not under emulation): they
  # compare their first 1,800 ticks (docs/determinism.md, "Measured": the matrix then takes
  # about 17 of .ci/run's 39 minutes on two idle cores).
  if [ "${LOCKSTEP_MATRIX_QUICK:-0}" = 1 ]; then
    matrix_args+=(--slow-ticks 600)
  elif [ "${LOCKSTEP_MATRIX_FULL:-0}" != 1 ]; then
    matrix_args+=(--slow-ticks 1800)
  fi
  bash scripts/determinism-matrix.sh "${matrix_args[@]}"
fi

echo "test.sh: all passed in $(( $(date +%s) - start )) s"

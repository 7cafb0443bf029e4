#!/usr/bin/env bash
# Builds lockstep and runs every test: the README's second command, and what .ci/run runs.
#   scripts/test.sh            install what is missing, build (warnings as errors), run all tests
#   LOCKSTEP_SKIP_ASAN=1 ...   skip the AddressSanitizer/UBSan pass
#   LOCKSTEP_SKIP_MATRIX=1 ... skip the cross-platform determinism matrix
#   LOCKSTEP_MATRIX_QUICK=1 .. -O0 and emulated matrix targets check only the first 600 ticks
#                              (about 7 minutes less; the table says `match to 600`)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
jobs=$(nproc)

bash scripts/setup.sh

echo "== build and test (preset ci: RelWithDebInfo, -Werror) =="
cmake --preset ci
cmake --build --preset ci -j "$jobs"
ctest --preset ci -j "$jobs"

if [ "${LOCKSTEP_SKIP_ASAN:-0}" != 1 ]; then
  echo "== build and test (preset asan: AddressSanitizer + UndefinedBehaviorSanitizer) =="
  cmake --preset asan
  cmake --build --preset asan -j "$jobs"
  ctest --preset asan -j "$jobs" -LE slow
fi

if [ "${LOCKSTEP_SKIP_MATRIX:-0}" != 1 ] && [ -f scripts/determinism-matrix.sh ]; then
  echo "== cross-platform determinism matrix =="
  matrix_args=(--inject-nondeterminism)
  if [ "${LOCKSTEP_MATRIX_QUICK:-0}" = 1 ]; then matrix_args+=(--slow-ticks 600); fi
  bash scripts/determinism-matrix.sh "${matrix_args[@]}"
fi

echo "test.sh: all passed in $(( $(date +%s) - start )) s"

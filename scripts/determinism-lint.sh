#!/usr/bin/env bash
# Runs ../shared/tools/determinism-lint on sim/; exits 77 (ctest: skipped) when the shared
# workspace is not beside this clone, so a clone elsewhere still passes.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
lint="$root/../shared/tools/determinism-lint"
if [ ! -f "$lint" ]; then
  echo "determinism-lint not found at $lint (no ../shared beside this clone): skipped"
  exit 77
fi
cd "$root" && bash "$lint" sim

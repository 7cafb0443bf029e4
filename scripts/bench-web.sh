#!/usr/bin/env bash
# The sim's step time in headless Chromium (wasm, the browser client's core) next to the native
# lockstep-sim, for `inputs` (600 ticks) and `pile` (300 ticks), both after 60 untimed steps: the
# fastest of ten rounds in the page (and its first, which includes the browser optimising the
# wasm) against the fastest of ten native runs; the hashes at the last tick must be equal
# (bench/README.md, "The sim in a browser").
# Usage: scripts/bench-web.sh [BIN_DIR]   (default build/release/apps, built if missing)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/release/apps}
if [ ! -x "$bin/lockstep-sim" ]; then
  cmake --preset release >/dev/null
  cmake --build --preset release -j 2 --target lockstep-sim
fi
python3 "$root/tests/web_browser_test.py" --bench --bin-dir "$bin" --source-dir "$root" \
  --work-dir "$root/build/web-bench"

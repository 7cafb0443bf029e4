#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main job.
# Until the network service lands this is the simulation runner on the `pile` demo scene
# (1,000 mixed bodies), printing the state hash every second of simulated time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target lockstep-sim
echo "== lockstep-sim --scene pile --ticks 600 (hash every 60 ticks = 1 s) =="
./build/default/apps/lockstep-sim --scene pile --ticks 600 --every 60

#!/usr/bin/env bash
# Simulation benchmarks, one command:
#   1. configure $BUILD_DIR (build/release) as Release and build lockstep-bench-sim;
#   2. run every benchmark (~2-3 min on a 2-core VM) as JSON, convert it with
#      scripts/bench-csv.py and write bench/results/<machine>/sim.csv ($SIM_CSV).
# Extra arguments go to the benchmark, e.g. --benchmark_filter=Scaling.
# Environment: BUILD_DIR (build/release), SIM_CSV.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build/release}

# shellcheck source=lib/bench-common.sh
source scripts/lib/bench-common.sh
csv=${SIM_CSV:-$(bench_results_dir)/sim.csv}

bench_build "$build" lockstep-bench-sim
mkdir -p "$(dirname "$csv")"
json=$(mktemp "${TMPDIR:-/tmp}/bench-sim.XXXXXX.json")
trap 'rm -f "$json"' EXIT
# The console table goes to the terminal, the JSON to a file (benchmark writes both).
"$build/bench/lockstep-bench-sim" --benchmark_out="$json" --benchmark_out_format=json "$@"
python3 scripts/bench-csv.py <"$json" >"$csv"
echo "bench-sim: wrote $csv"

#!/usr/bin/env bash
# Side-by-side comparison with Bullet 3, one command:
#   1. configure $BUILD_DIR (build/release) as Release and build lockstep-bench-bullet, which
#      CMake only defines when libbullet-dev is installed (scripts/setup.sh libbullet-dev);
#   2. run it (every scene, both engines, interleaved in one process; ~3-4 min on a 2-core VM)
#      and write bench/results/<machine>/bullet_compare.csv ($BULLET_CSV), printing the table.
# Extra arguments go to the program, e.g. --scenes pyramid,pile --reps 5 (see --help).
# Environment: BUILD_DIR (build/release), BULLET_CSV.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build/release}

# shellcheck source=lib/bench-common.sh
source scripts/lib/bench-common.sh
csv=${BULLET_CSV:-$(bench_results_dir)/bullet_compare.csv}

if ! pkg-config --exists bullet 2>/dev/null; then
  echo "bench-bullet: Bullet is not installed (pkg-config bullet): run scripts/setup.sh libbullet-dev" >&2
  exit 1
fi
bench_build "$build" lockstep-bench-bullet
mkdir -p "$(dirname "$csv")"
echo "bench-bullet: load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/lockstep-bench-bullet" --csv "$csv" "$@"
echo "bench-bullet: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

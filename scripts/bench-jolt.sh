#!/usr/bin/env bash
# Side by side with Jolt Physics' own performance test, one command:
#   scripts/bench-jolt.sh --jolt PERFORMANCE_TEST --jolt-dir CHECKOUT [--pairs N] [--scenes LIST]
# PERFORMANCE_TEST is Jolt's PerformanceTest program, built by you from CHECKOUT (a Distribution
# build with CROSS_PLATFORM_DETERMINISTIC=ON, the build its results are quoted for); the script
# never fetches or builds Jolt, and nothing of Jolt is part of this project. It runs from
# CHECKOUT, as Jolt's test expects.
#
# For each scene of LIST (default pyramid3d,convex_vs_mesh) it runs N pairs (default 5),
# alternated so that both engines see the same machine: Jolt's `-s=Pyramid` or `-s=ConvexVsMesh`
# with `-q=Discrete -t=1 -no_sleep` (one thread, no sleeping; Jolt prints steps per second of its
# Update calls), then `lockstep-sim --scene ... --ticks 500 --timing` (the 500 steps alone, the
# per-step state hash included). pyramid3d is run from its printed scene with sleeping off, as
# Jolt runs it with -no_sleep; convex_vs_mesh has sleeping off already. It prints every pair, the
# ratio of the means and the median of the pairs' ratios, with the load average, and writes
# bench/results/<machine>/jolt_compare.csv ($JOLT_CSV).
#
# Environment: BUILD_DIR (build/release; configured and built as Release when lockstep-sim is
# missing), JOLT_CSV.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build/release}

# shellcheck source=lib/bench-common.sh
source scripts/lib/bench-common.sh

jolt=""
jolt_dir=""
pairs=5
scenes="pyramid3d,convex_vs_mesh"
while [ $# -gt 0 ]; do
  case "$1" in
  --jolt)
    jolt=$2
    shift 2
    ;;
  --jolt-dir)
    jolt_dir=$2
    shift 2
    ;;
  --pairs)
    pairs=$2
    shift 2
    ;;
  --scenes)
    scenes=$2
    shift 2
    ;;
  -h | --help)
    sed -n '2,19p' "$0"
    exit 0
    ;;
  *)
    echo "bench-jolt: unknown argument $1 (--help)" >&2
    exit 2
    ;;
  esac
done
if [ -z "$jolt" ] || [ -z "$jolt_dir" ]; then
  echo "bench-jolt: --jolt PERFORMANCE_TEST and --jolt-dir CHECKOUT are required (--help)" >&2
  exit 2
fi
if [ ! -x "$jolt" ] || [ ! -d "$jolt_dir" ]; then
  echo "bench-jolt: $jolt is not an executable or $jolt_dir is not a directory" >&2
  exit 2
fi
case "$pairs" in
'' | *[!0-9]* | 0)
  echo "bench-jolt: --pairs wants a positive number, not '$pairs'" >&2
  exit 2
  ;;
esac
jolt=$(cd "$(dirname "$jolt")" && pwd)/$(basename "$jolt")

sim="$build/apps/lockstep-sim"
[ -x "$sim" ] || bench_build "$build" lockstep-sim
csv=${JOLT_CSV:-$(bench_results_dir)/jolt_compare.csv}
mkdir -p "$(dirname "$csv")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Jolt's seconds for 500 steps, from the steps per second on its last line.
jolt_seconds() {
  local line
  line=$(cd "$jolt_dir" && "$jolt" "-s=$1" -q=Discrete -t=1 -no_sleep | tail -n 1)
  awk -v line="$line" 'BEGIN { split(line, f, ", "); if (f[3] + 0 <= 0) exit 1;
    printf "%.4f\n", 500 / f[3] }'
}
# lockstep's seconds for the 500 ticks, from --timing's line on stderr.
lockstep_seconds() {
  "$sim" --scene "$1" --ticks 500 --timing 2>&1 >/dev/null |
    sed -n 's/.* ticks, .* bodies, \([0-9.]*\) s .*/\1/p'
}

echo "scene,pair,jolt_s,lockstep_s,ratio,load1" >"$csv"
IFS=',' read -r -a scene_list <<<"$scenes"
for scene in "${scene_list[@]}"; do
  case "$scene" in
  pyramid3d)
    jolt_scene=Pyramid
    "$sim" --scene pyramid3d --print-scene | sed 's/enable_sleep=1/enable_sleep=0/' >"$work/pyramid3d.scene"
    ours="$work/pyramid3d.scene"
    ;;
  convex_vs_mesh)
    jolt_scene=ConvexVsMesh
    ours=convex_vs_mesh
    ;;
  *)
    echo "bench-jolt: no Jolt counterpart for scene '$scene' (pyramid3d, convex_vs_mesh)" >&2
    exit 2
    ;;
  esac
  echo "bench-jolt: $scene against Jolt's $jolt_scene, $pairs pairs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for pair in $(seq 1 "$pairs"); do
    # A run that fails or prints no time leaves its figure empty: reported below, not a bare exit.
    j=$(jolt_seconds "$jolt_scene") || j=""
    l=""
    [ -z "$j" ] || l=$(lockstep_seconds "$ours") || l=""
    if [ -z "$j" ] || [ -z "$l" ]; then
      echo "bench-jolt: a run printed no time (Jolt '$j', lockstep '$l')" >&2
      exit 1
    fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    ratio=$(awk -v j="$j" -v l="$l" 'BEGIN { printf "%.3f", j / l }')
    printf '  pair %d: Jolt %.3f s, lockstep %.3f s: %s x (load %s)\n' "$pair" "$j" "$l" "$ratio" "$load"
    echo "$scene,$pair,$j,$l,$ratio,$load" >>"$csv"
  done
  awk -F, -v scene="$scene" '$1 == scene { j += $3; l += $4; r[n++] = $5 }
    END { for (a = 0; a < n; ++a) for (b = a + 1; b < n; ++b) if (r[b] < r[a]) { t = r[a]; r[a] = r[b]; r[b] = t }
          median = n % 2 ? r[(n - 1) / 2] : (r[n / 2 - 1] + r[n / 2]) / 2
          printf "bench-jolt: %s: lockstep runs Jolt'"'"'s scene %.2f times as fast on the means (Jolt %.3f s, lockstep %.3f s), median of the pairs %.2f, range %.2f-%.2f\n", scene, j / l, j / n, l / n, median, r[0], r[n - 1] }' "$csv"
done
echo "bench-jolt: load average after: $(cut -d' ' -f1-3 /proc/loadavg); $csv"

# shellcheck shell=bash
# Sourced by the benchmark scripts (bench-sim.sh, bench-bullet.sh, server-load.sh).

# The results folder of this machine: bench/results/<CPU model>-<cores>c, lower case, so that
# runs on the same machine land next to each other and are compared with each other only.
bench_results_dir() {
  local model
  model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
  printf 'bench/results/%s\n' "$(printf '%s-%sc' "${model:-unknown-cpu}" "$(nproc)" |
    tr '[:upper:]' '[:lower:]' |
    sed -e 's/([^)]*)//g' -e 's/[^a-z0-9]\+/-/g' -e 's/^-//' -e 's/-$//')"
}

# bench_build DIR TARGET...: configure DIR as a Release build (once) and build the targets.
bench_build() {
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$dir" -j 2 --target "$@"
}

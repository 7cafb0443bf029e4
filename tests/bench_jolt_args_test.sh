#!/usr/bin/env bash
# scripts/bench-jolt.sh answers bad arguments, and a "Jolt" that prints no time, with a message
# and a non-zero exit, before running anything long. $1: a build folder with lockstep-sim.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export BUILD_DIR=$build JOLT_CSV=$work/out.csv
failures=0
# expect STATUS PATTERN ARGS...: the script exits STATUS and its stderr matches PATTERN.
expect() {
  local want=$1 pattern=$2
  shift 2
  local got=0
  bash "$root/scripts/bench-jolt.sh" "$@" >"$work/stdout" 2>"$work/stderr" || got=$?
  if [ "$got" -ne "$want" ] || ! grep -q -- "$pattern" "$work/stderr"; then
    echo "FAIL: bench-jolt.sh $* exited $got (want $want), stderr: $(cat "$work/stderr")"
    failures=$((failures + 1))
  fi
}
expect 2 "are required" --pairs 3
expect 2 "unknown argument" --bogus
expect 2 "is not an executable" --jolt "$work/nothere" --jolt-dir "$work"
expect 2 "positive number" --jolt /bin/true --jolt-dir "$work" --pairs 0
expect 2 "positive number" --jolt /bin/true --jolt-dir "$work" --pairs abc
expect 2 "no Jolt counterpart" --jolt /bin/true --jolt-dir "$work" --scenes pile
# /bin/true prints nothing: the pair is refused with a message, not a bare exit.
expect 1 "printed no time" --jolt /bin/true --jolt-dir "$work" --scenes convex_vs_mesh --pairs 1
[ "$failures" -eq 0 ] && echo "bench-jolt.sh: 7 bad invocations refused"
exit "$failures"

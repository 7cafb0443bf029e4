#!/usr/bin/env bash
# Compares lockstep-sim's hash chains with the committed golden files (tests/golden/*.txt).
#
#   scripts/check-golden.sh [--scene NAME]... [--golden-dir DIR] [--max-ticks N] [--] COMMAND...
#
# COMMAND runs lockstep-sim: a path (`build/ci/apps/lockstep-sim`), or a runner and a path
# (`qemu-aarch64 build/x/apps/lockstep-sim`, `node --no-experimental-fetch build/x/lockstep-sim.js`).
# Each golden file holds, after its `#` comment lines, exactly the `tick hash` lines that
# lockstep-sim printed; its `# args:` line names the arguments it was made with, so the file
# alone says how to reproduce it. --max-ticks N (a multiple of the file's --every) runs only the
# first N ticks and compares the golden lines up to tick N: a documented prefix, for slow
# runners only; the result line then says `match up to tick N`. Prints one line per scene:
#   check-golden: SCENE: match (N lines, W s, C s cpu)
#   check-golden: SCENE: tick T differs: expected '...', got '...'
# Exit: 0 all match, 1 a mismatch or a failed run, 2 usage error, 77 no golden files (skip).
# Never writes a golden file: regenerating them is scripts/update-golden.sh's deliberate job.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
golden_dir="$root/tests/golden"
max_ticks=""
scenes=()
while [ $# -gt 0 ]; do
  case "$1" in
  --scene)
    scenes+=("$2")
    shift 2
    ;;
  --golden-dir)
    golden_dir=$2
    shift 2
    ;;
  --max-ticks)
    max_ticks=$2
    shift 2
    ;;
  --)
    shift
    break
    ;;
  -h | --help)
    sed -n '2,19p' "$0"
    exit 0
    ;;
  -*)
    echo "check-golden: unknown option $1" >&2
    exit 2
    ;;
  *) break ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "usage: check-golden.sh [--scene NAME]... [--golden-dir DIR] [--max-ticks N] [--] COMMAND..." >&2
  exit 2
fi
command=("$@")

if [ ${#scenes[@]} -eq 0 ]; then
  for f in "$golden_dir"/*.txt; do
    [ -f "$f" ] && scenes+=("$(basename "$f" .txt)")
  done
fi
if [ ${#scenes[@]} -eq 0 ]; then
  echo "check-golden: no golden files in $golden_dir: skipped"
  exit 77
fi

# Value of flag $1 in the args array (empty when absent).
arg_value() {
  local i
  for ((i = 0; i + 1 < ${#args[@]}; i++)); do
    if [ "${args[$i]}" = "$1" ]; then
      echo "${args[$((i + 1))]}"
      return
    fi
  done
}

# Reads the run's lines from stdin as they arrive and prints the verdict (nothing when every
# line matched): `diff N WANT GOT`, `extra N - GOT` or `missing N WANT -`, tab-separated. It
# returns at the first difference, which closes the pipe: the run is then ended by SIGPIPE the
# next time it prints. (In bash, not awk: mawk, Debian's awk, reads a pipe in blocks and saw
# nothing before the run had ended, so a run that differed at tick 60 still ran to its end.)
compare_lines() {
  local n=0 got want
  exec 3<"$1"
  while IFS= read -r got; do
    n=$((n + 1))
    if ! IFS= read -r want <&3; then
      printf 'extra\t%s\t-\t%s\n' "$n" "$got"
      return
    fi
    if [ "$want" != "$got" ]; then
      printf 'diff\t%s\t%s\t%s\n' "$n" "$want" "$got"
      return
    fi
  done
  if IFS= read -r want <&3; then printf 'missing\t%s\t%s\t-\n' "$((n + 1))" "$want"; fi
}
# When two lines print alike but differ (a carriage return, a tab, a trailing space, a byte
# outside ASCII), says which bytes: a Windows build writing text-mode stdout ends every line in
# \r\n, and the two lines then look the same in the message above.
invisible_difference() {
  local want=$1 got=$2
  if [ "$got" = "$want"$'\r' ]; then
    echo "check-golden:   the line ends in a carriage return (\\r\\n line ends): the binary writes stdout in text mode; write it in binary mode"
  elif [ "$(tr -cd '[:graph:]' <<<"$want")" = "$(tr -cd '[:graph:]' <<<"$got")" ]; then
    echo "check-golden:   they differ in invisible bytes: expected $(printf '%q' "$want"), got $(printf '%q' "$got")"
  fi
}
# The sources' physics revision (sim/include/lockstep/sim/version.h): every chain must have been
# made at it (scripts/update-golden.sh stamps it), so a revision raised without new chains, or
# chains copied from another revision, are caught here.
revision=$(sed -n 's/^inline constexpr uint32_t kPhysicsRevision = \([0-9]*\);.*/\1/p' \
  "$root/sim/include/lockstep/sim/version.h")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for scene in "${scenes[@]}"; do
  golden="$golden_dir/$scene.txt"
  if [ ! -f "$golden" ]; then
    echo "check-golden: $scene: no golden file $golden"
    status=1
    continue
  fi
  args_line=$(grep -m1 '^# args:' "$golden" || true)
  if [ -z "$args_line" ]; then
    echo "check-golden: $scene: $golden has no '# args:' line"
    status=1
    continue
  fi
  stamped=$(sed -n 's/^# physics revision: \([0-9]*\).*/\1/p' "$golden")
  if [ "$stamped" != "$revision" ]; then
    echo "check-golden: $scene: made at physics revision ${stamped:-(not stated)}, the sources are at ${revision:-(unreadable)}: regenerate it with scripts/update-golden.sh"
    status=1
    continue
  fi
  read -r -a args <<<"${args_line#'# args:'}"
  grep -v -e '^#' -e '^[[:space:]]*$' "$golden" >"$tmp/expected"

  prefix=""
  ticks=$(arg_value --ticks)
  if [ -n "$max_ticks" ] && [ -n "$ticks" ] && [ "$max_ticks" -lt "$ticks" ]; then
    every=$(arg_value --every)
    if [ $((max_ticks % ${every:-60})) -ne 0 ]; then
      echo "check-golden: --max-ticks $max_ticks is not a multiple of --every ${every:-60}" >&2
      exit 2
    fi
    for ((i = 0; i < ${#args[@]}; i++)); do
      [ "${args[$i]}" != --ticks ] || args[i + 1]=$max_ticks
    done
    awk -v n="$max_ticks" '$1 + 0 <= n' "$tmp/expected" >"$tmp/expected.prefix"
    mv "$tmp/expected.prefix" "$tmp/expected"
    prefix=" up to tick $max_ticks of $ticks"
  fi

  # Compare line by line as the output arrives, and stop at the first difference (the run is
  # then ended by SIGPIPE as soon as it prints again, instead of running to its end).
  start_ns=$(date +%s%N)
  {
    # From the repository root: scene files in `# args:` are paths relative to it.
    (cd "$root" && "${command[@]}" "${args[@]}") 2>"$tmp/stderr"
    run_rc=$?
    times >"$tmp/times" # second line: the run's user and system cpu time
    exit $run_rc
  } |
    compare_lines "$tmp/expected" >"$tmp/verdict"
  rc=${PIPESTATUS[0]}
  seconds=$(awk -v ns=$(($(date +%s%N) - start_ns)) 'BEGIN { printf "%.1f", ns / 1e9 }')
  cpu=$(awk 'NR == 2 { split($1 " " $2, t, /[ms ]/); printf "%.1f", t[1] * 60 + t[2] + t[4] * 60 + t[5] }' \
    "$tmp/times" 2>/dev/null)
  cpu=${cpu:-?}

  if [ ! -s "$tmp/verdict" ] && [ "$rc" -eq 0 ]; then
    echo "check-golden: $scene: match$prefix ($(wc -l <"$tmp/expected") lines, $seconds s, $cpu s cpu)"
    continue
  fi

  status=1
  if [ ! -s "$tmp/verdict" ]; then
    echo "check-golden: $scene: every line matched but the run failed (exit $rc, $seconds s, $cpu s cpu)"
  else
    IFS=$'\t' read -r kind _ want got <"$tmp/verdict"
    case $kind in
    extra) echo "check-golden: $scene: extra output after the last golden line: '$got' ($seconds s, $cpu s cpu)" ;;
    missing) echo "check-golden: $scene: tick $(awk '{ print $1 }' <<<"$want") differs: expected '$want', got no line (exit $rc, $seconds s, $cpu s cpu)" ;;
    diff)
      echo "check-golden: $scene: tick $(awk '{ print $1 }' <<<"$want") differs: expected '$want', got '$got' ($seconds s, $cpu s cpu)"
      invisible_difference "$want" "$got"
      ;;
    esac
  fi
  if [ -s "$tmp/stderr" ]; then
    sed 's/^/check-golden:   stderr: /' "$tmp/stderr" | head -5
  fi
done
exit $status

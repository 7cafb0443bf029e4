#!/usr/bin/env bash
# Compares lockstep-sim's hash chains with the committed golden files (tests/golden/*.txt).
#
#   scripts/check-golden.sh [--scene NAME]... [--golden-dir DIR] [--] COMMAND...
#
# COMMAND runs lockstep-sim: a path (`build/ci/apps/lockstep-sim`), or a runner and a path
# (`qemu-aarch64 build/x/apps/lockstep-sim`, `node --no-experimental-fetch build/x/lockstep-sim.js`).
# Each golden file holds, after its `#` comment lines, exactly the `tick hash` lines that
# lockstep-sim printed; its `# args:` line names the arguments it was made with, so the file
# alone says how to reproduce it. Prints one line per scene:
#   check-golden: SCENE: match (N lines, S s)
#   check-golden: SCENE: tick T differs: expected '...', got '...'
# Exit: 0 all match, 1 a mismatch or a failed run, 2 usage error, 77 no golden files (skip).
# Never writes a golden file: regenerating them is scripts/update-golden.sh's deliberate job.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
golden_dir="$root/tests/golden"
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
  --)
    shift
    break
    ;;
  -h | --help)
    sed -n '2,16p' "$0"
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
  echo "usage: check-golden.sh [--scene NAME]... [--golden-dir DIR] [--] COMMAND..." >&2
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
  read -r -a args <<<"${args_line#'# args:'}"
  grep -v -e '^#' -e '^[[:space:]]*$' "$golden" >"$tmp/expected"

  start_ns=$(date +%s%N)
  "${command[@]}" "${args[@]}" >"$tmp/actual" 2>"$tmp/stderr"
  rc=$?
  seconds=$(awk -v ns=$(($(date +%s%N) - start_ns)) 'BEGIN { printf "%.1f", ns / 1e9 }')

  # First differing line; its first field is the tick (lockstep-sim prints `tick hash`).
  first=$(awk 'NR == FNR { want[FNR] = $0; n = FNR; next }
               { got[FNR] = $0; m = FNR }
               END {
                 for (i = 1; i <= (n > m ? n : m); i++)
                   if (want[i] != got[i]) { print i; exit }
               }' "$tmp/expected" "$tmp/actual")
  if [ "$rc" -ne 0 ] && [ -z "$first" ]; then
    first=$(($(wc -l <"$tmp/expected") + 1))
  fi
  if [ -z "$first" ]; then
    echo "check-golden: $scene: match ($(wc -l <"$tmp/expected") lines, $seconds s)"
    continue
  fi

  status=1
  want=$(sed -n "${first}p" "$tmp/expected")
  got=$(sed -n "${first}p" "$tmp/actual")
  tick=$(awk '{ print $1 }' <<<"$want")
  if [ -z "$want" ]; then
    echo "check-golden: $scene: extra output after the last golden line: got '$got' (exit $rc, $seconds s)"
  elif [ -z "$got" ]; then
    echo "check-golden: $scene: tick $tick differs: expected '$want', got no line (exit $rc, $seconds s)"
  else
    echo "check-golden: $scene: tick $tick differs: expected '$want', got '$got' (exit $rc, $seconds s)"
  fi
  if [ -s "$tmp/stderr" ]; then
    sed 's/^/check-golden:   stderr: /' "$tmp/stderr" | head -5
  fi
done
exit $status

#!/usr/bin/env bash
# The Python ctypes example must print the same hash chain as lockstep-sim, line for line, for
# built-in scenes and a scene file with scheduled commands (the gameplay golden scene).
#   compare_python_chain.sh PYTHON EXAMPLE LIBLOCKSTEP_C LOCKSTEP_SIM
set -euo pipefail
python=$1 example=$2 lib=$3 sim=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
status=0
for spec in "bounce 600" "pyramid 300" "$root/tests/scenes/gameplay.txt 600"; do
  read -r scene ticks <<<"$spec"
  expected=$("$sim" --scene "$scene" --ticks "$ticks" --every 60)
  got=$("$python" "$example" --lib "$lib" --scene "$scene" --ticks "$ticks" --every 60)
  if [ "$got" = "$expected" ] && [ -n "$got" ]; then
    echo "match: $(basename "$scene") ($ticks ticks, $(wc -l <<<"$got") hashes, last $(tail -n 1 <<<"$got"))"
  else
    echo "DIFFERS: $scene ($ticks ticks)"
    diff <(echo "$expected") <(echo "$got") || true
    status=1
  fi
done
exit $status

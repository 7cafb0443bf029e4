#!/usr/bin/env bash
# Regenerates the golden hash chains in tests/golden/ — a deliberate act, never done by a test.
#
#   scripts/update-golden.sh --reason "why the physics changed" [--sim PATH] [--golden-dir DIR]
#                            [--scenes-changed]
#                            [SCENE...]
#
# Builds lockstep-sim (x86-64 g++ -O2, the matrix's gcc-O2 folder) unless --sim names one, runs
# each scene with the arguments in its golden file's `# args:` line (new scenes: --scene NAME
# --ticks 3600 --every 60, plus --seed for `inputs`) and rewrites the file. SCENE defaults to
# every existing golden file, or to the built-in set when there is none. Each file is stamped
# with kPhysicsRevision (sim/include/lockstep/sim/version.h); a chain whose hashes change must be
# stamped with a higher revision than it had, else nothing is written (exit 2): raise it first.
# --scenes-changed says the step did not change, only what the built-in scenes define (a body, a
# default of WorldDef): a world made from the same WorldDef gives the same hashes as before, so
# the revision stays and replay files of it stay valid; the chains are rewritten at it.
# Afterwards: run scripts/determinism-matrix.sh, and commit tests/golden/ on its own with a
# message that says why the physics changed (the --reason text is printed as a starting point).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
golden_dir="$root/tests/golden"
default_scenes=(pyramid pile bounce inputs)
golden_ticks=3600
golden_every=60
inputs_seed=6840143426475589633 # lockstep::sim::kDefaultInputSeed, 0x5eed1234abcd0001

reason=""
sim=""
scenes_changed=0
scenes=()
while [ $# -gt 0 ]; do
  case "$1" in
  --reason)
    reason=$2
    shift 2
    ;;
  --sim)
    sim=$2
    shift 2
    ;;
  --scenes-changed)
    scenes_changed=1
    shift
    ;;
  --golden-dir)
    golden_dir=$2
    shift 2
    ;;
  -h | --help)
    sed -n '2,14p' "$0"
    exit 0
    ;;
  -*)
    echo "update-golden: unknown option $1" >&2
    exit 2
    ;;
  *)
    scenes+=("$1")
    shift
    ;;
  esac
done

if [ "${CI:-}" = true ]; then
  echo "update-golden: refusing to run under CI: golden files change only by a deliberate commit" >&2
  exit 2
fi
if [ -z "$reason" ]; then
  echo "update-golden: say why the physics changed: --reason \"...\" (it goes in the commit message)" >&2
  exit 2
fi

if [ ${#scenes[@]} -eq 0 ]; then
  for f in "$golden_dir"/*.txt; do
    [ -f "$f" ] && scenes+=("$(basename "$f" .txt)")
  done
  [ ${#scenes[@]} -gt 0 ] || scenes=("${default_scenes[@]}")
fi

if [ -z "$sim" ]; then
  out=$(bash "$root/scripts/determinism-matrix.sh" --_build-one gcc-O2 "$root/build" 2)
  if [[ "$out" != "BUILD gcc-O2 ok "* ]]; then
    echo "update-golden: build failed: see $root/build/matrix-logs/gcc-O2.build.log" >&2
    exit 1
  fi
  sim="$root/build/matrix-gcc-O2/apps/lockstep-sim"
fi

sim=$(cd "$(dirname "$sim")" && pwd)/$(basename "$sim") # absolute: runs from the root below
# The physics revision of the sources (sim/include/lockstep/sim/version.h): stamped into every
# chain, and a chain whose hashes change must carry a higher one than before.
revision=$(sed -n 's/^inline constexpr uint32_t kPhysicsRevision = \([0-9]*\);.*/\1/p' \
  "$root/sim/include/lockstep/sim/version.h")
if [ -z "$revision" ]; then
  echo "update-golden: cannot read kPhysicsRevision from sim/include/lockstep/sim/version.h" >&2
  exit 1
fi
mkdir -p "$golden_dir"
changed=()
written=() # "tmp golden" pairs, moved into place once every scene has passed
stale=()
for scene in "${scenes[@]}"; do
  golden="$golden_dir/$scene.txt"
  args="--scene $scene --ticks $golden_ticks --every $golden_every"
  # The input script's seed is spelled out so the file alone says how to reproduce it.
  [ "$scene" != inputs ] || args+=" --seed $inputs_seed"
  if [ -f "$golden" ] && grep -q '^# args:' "$golden"; then
    args=$(grep -m1 '^# args:' "$golden" | sed 's/^# args:[[:space:]]*//')
  fi
  read -r -a argv <<<"$args"
  tmp=$(mktemp)
  {
    echo "# Golden hash chain of lockstep-sim: the exact \`tick hash\` lines it prints for the args below."
    echo "# Checked by scripts/check-golden.sh (ctest golden_hashes) and scripts/determinism-matrix.sh."
    echo "# Regenerate only with scripts/update-golden.sh, in a commit that says why the physics changed."
    echo "# args: $args"
    echo "# physics revision: $revision"
  } >"$tmp"
  # From the repository root: scene files in `# args:` are paths relative to it.
  if ! (cd "$root" && "$sim" "${argv[@]}") >>"$tmp"; then
    rm -f "$tmp"
    echo "update-golden: $sim ${argv[*]} failed" >&2
    exit 1
  fi
  if [ -f "$golden" ] && cmp -s "$tmp" "$golden"; then
    echo "update-golden: $scene: unchanged"
    rm -f "$tmp"
    continue
  fi
  if [ -f "$golden" ]; then
    first=$(diff <(grep -v '^#' "$golden") <(grep -v '^#' "$tmp") | grep -m1 '^<' | awk '{ print $2 }' || true)
    old_revision=$(sed -n 's/^# physics revision: \([0-9]*\).*/\1/p' "$golden")
    if [ -n "$first" ] && [ "${old_revision:-0}" -ge "$revision" ] && [ $scenes_changed = 0 ]; then
      stale+=("$scene")
    fi
    echo "update-golden: $scene: changed${first:+ from tick $first}"
  else
    echo "update-golden: $scene: new ($(grep -vc '^#' "$tmp") lines)"
  fi
  written+=("$tmp" "$golden")
  changed+=("$scene")
done

if [ ${#stale[@]} -gt 0 ]; then
  for ((i = 0; i < ${#written[@]}; i += 2)); do rm -f "${written[i]}"; done
  cat >&2 <<EOF
update-golden: the hashes of ${stale[*]} changed, but kPhysicsRevision is still $revision.
  The physics changed: raise kPhysicsRevision in sim/include/lockstep/sim/version.h, so that
  servers, clients and replay files of revision $revision refuse this build instead of diverging
  from it, and run this again. Nothing was written.
EOF
  exit 2
fi
for ((i = 0; i < ${#written[@]}; i += 2)); do mv "${written[i]}" "${written[i + 1]}"; done

if [ ${#changed[@]} -eq 0 ]; then
  echo "update-golden: nothing changed"
  exit 0
fi
cat <<EOF

update-golden: rewrote ${changed[*]}. Next:
  1. bash scripts/determinism-matrix.sh      (every platform must agree with the new chains)
  2. commit tests/golden/ on its own, e.g.:
       Golden hashes: regenerate ${changed[*]}

       Why the physics changed: $reason
EOF

#!/usr/bin/env bash
# The cross-platform determinism matrix (docs/determinism.md): builds lockstep-sim and
# lockstep-replay-verify for every target below, runs every golden scene (tests/golden/*.txt) and
# verifies every golden replay (replays/golden/*.lsr: recorded matches with player inputs) on
# it, and prints a table target x scene/replay with `match` or the first tick whose hash differs.
#
#   scripts/determinism-matrix.sh [options]
#     --targets A,B,...          only these targets (default: every normal target; see --list)
#     --representative           the change check's set instead of every target: x86-64
#                                clang14 -O3, i686, aarch64, wasm32 and Windows x86-64 (under
#                                wine; it also builds lockstep_c.dll and runs the C API's suite
#                                through it) (x86-64 gcc -O2 is the ci
#                                build's own golden test); no injected target (the desync drill
#                                proves there that a broken build is caught)
#     --scenes A,B,...           only these golden scenes (default: every tests/golden/*.txt)
#     --replays A,B,...          only these golden replays, by file name without .lsr
#                                (default: every replays/golden/*.lsr); --replays none skips them
#     --jobs N                   builds and runs side by side (default: min(2, nproc))
#     --no-install               do not install missing toolchains (scripts/install-matrix-toolchains.sh)
#     --build-only               build the targets and stop (no runs, no table; exit 0 even when a
#                                build failed: the run that follows reports it)
#     --inject-nondeterminism    also build the deliberately broken targets (aarch64 with
#                                -ffp-contract=fast, i686 with x87 math) to prove the matrix
#                                catches them; each must differ from the golden hashes
#                                within its first 600 ticks
#     --build-root DIR           build folders go to DIR/matrix-TARGET (default: build/)
#     --golden-dir DIR           golden files to compare with (default: tests/golden)
#     --slow-ticks N             on the slow targets (-O0 builds, aarch64 under qemu) run only the
#                                first N ticks (a multiple of 60) and compare that prefix of the
#                                golden chains; the table says `match to N`. Default: the full
#                                length everywhere (3,600 ticks)
#     --list                     print the targets and exit
#
# Exit 0 when every normal target matches every scene and replay (and, with
# --inject-nondeterminism, every injected target differs somewhere); 1 otherwise; 2 on a usage
# error.
# Build folders are reused, so a second run rebuilds only what changed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
toolchains="$root/cmake/toolchains"
golden_dir="$root/tests/golden"
replay_dir="$root/replays/golden"
# em++ finds its JS tools (acorn) only through NODE_PATH on Debian.
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}

normal_targets=(
  gcc-O0 gcc-O2 gcc-O3
  clang14-O0 clang14-O2 clang14-O3
  clang19-O0 clang19-O2 clang19-O3
  gcc-v3-O2 clang14-v3-O2 gcc-O2-scalar
  i686-gcc-O2 aarch64-gcc-O2 wasm32-emcc-O2 win64-mingw-O2
)
injected_targets=(aarch64-gcc-O2-fpcontract-fast i686-gcc-O2-x87)
# The change check (scripts/test.sh without --full): one target of each architecture the matrix
# guards, and clang at another -O level than the ci build's gcc -O2 (docs/ci.md says why these).
representative_targets=(clang14-O3 i686-gcc-O2 aarch64-gcc-O2 wasm32-emcc-O2 win64-mingw-O2)
representative_injected=()
injected_ticks=600

# runs_natively EXE: false when this kernel cannot execute EXE at all (exit 126); true when EXE
# does not exist yet (the build phase) or runs.
runs_natively() {
  [ -e "$1" ] || return 0
  local rc=0
  "$1" --help >/dev/null 2>&1 || rc=$?
  [ "$rc" -ne 126 ]
}

# target_spec NAME: sets toolchain, opt (0/2/3), group (installer group), runner (array),
# exe and replay_exe (paths inside the build folder), inject_flags (test-only flags),
# slow (1: -O0 or emulated, see --slow-ticks).
target_spec() {
  local name=$1
  inject_flags=""
  slow=0
  runner=()
  exe=apps/lockstep-sim
  replay_exe=apps/lockstep-replay-verify
  capi=0
  case "$name" in
  *-O0*) opt=0 slow=1 ;;
  *-O2*) opt=2 ;;
  *-O3*) opt=3 ;;
  *) return 1 ;;
  esac
  case "$name" in
  gcc-v3-O*) toolchain=x86_64-v3-gcc group=native ;;
  clang14-v3-O*) toolchain=x86_64-v3-clang group=native ;;
  gcc-O*) toolchain=x86_64-gcc group=native ;;
  clang14-O*) toolchain=x86_64-clang group=native ;;
  clang19-O*) toolchain=x86_64-clang19 group=clang2 ;;
  i686-gcc-O*)
    toolchain=i686-linux-gnu group=i686
    # The static i686 binaries run natively on a kernel with 32-bit x86 support; on one without
    # it (exec fails with "Exec format error", exit 126) they run under qemu-i386, which executes
    # the same SSE2 instructions with IEEE results (the x87 target still differs under it).
    if ! runs_natively "$build_root/matrix-$name/apps/lockstep-sim"; then
      runner=(qemu-i386)
      slow=1
    fi
    ;;
  aarch64-gcc-O*)
    toolchain=aarch64-linux-gnu group=aarch64 slow=1
    runner=(qemu-aarch64)
    ;;
  win64-mingw-O*)
    # Windows x86-64 (mingw-w64, static) under wine, in a wine prefix of the target's own that
    # the build phase creates (its first start takes a while; the runs then start quickly).
    toolchain=x86_64-w64-mingw32 group=mingw
    runner=(env WINEPREFIX="$build_root/matrix-$name/wine-prefix" WINEDEBUG=-all
      /usr/lib/wine/wine64)
    exe=apps/lockstep-sim.exe
    replay_exe=apps/lockstep-replay-verify.exe
    capi=1 # lockstep_c.dll is built and its C suite run on this target too
    ;;
  wasm32-emcc-O*)
    toolchain=wasm32-emscripten group=wasm
    runner=(node --no-experimental-fetch)
    exe=apps/lockstep-sim.js
    replay_exe=apps/lockstep-replay-verify.js
    ;;
  *) return 1 ;;
  esac
  simd_scalar=OFF
  case "$name" in
  *-scalar) simd_scalar=ON ;; # the lane types as plain floats (sim/src/simd/)
  esac
  case "$name" in
  *-fpcontract-fast) inject_flags="-ffp-contract=fast" ;;
  *-x87) inject_flags="-mfpmath=387" ;;
  esac
  [ -f "$toolchains/$toolchain.cmake" ]
}

is_injected() { [[ " ${injected_targets[*]} " == *" $1 "* ]]; }

build_root="$root/build"
jobs=$(($(nproc) < 2 ? $(nproc) : 2))

# Internal: configure and build one target; prints `BUILD target ok|failed seconds warnings`.
if [ "${1:-}" = "--_build-one" ]; then
  name=$2 build_root=$3 build_jobs=$4
  target_spec "$name"
  dir="$build_root/matrix-$name"
  log="$build_root/matrix-logs/$name.build.log"
  mkdir -p "$dir" "$build_root/matrix-logs"
  # Header-only dependencies staged in one folder, for every target alike: the host's
  # /usr/include must not reach a cross compiler (its libc headers are x86-64's), and a native
  # target is built the same way so that the matrix compares like with like. xxHash for the sim;
  # FlatBuffers for lockstep-replay-verify (cmake/LockstepCrossReplay.cmake).
  staged="$dir/staged-include"
  mkdir -p "$staged"
  for h in xxhash.h xxh3.h; do
    [ -f "/usr/include/$h" ] || continue
    cmp -s "/usr/include/$h" "$staged/$h" || cp "/usr/include/$h" "$staged/$h"
  done
  rm -rf "${staged:?}/flatbuffers"
  cp -r /usr/include/flatbuffers "$staged/flatbuffers"
  cmake_args=(-S "$root" -B "$dir" -G Ninja
    -DCMAKE_TOOLCHAIN_FILE="$toolchains/$toolchain.cmake"
    -DLOCKSTEP_SIM_ONLY=ON -DLOCKSTEP_REPLAY_TOOL=ON
    -DLOCKSTEP_STAGED_INCLUDE_DIR="$staged" -DXXHASH_INCLUDE_DIR="$staged"
    -DLOCKSTEP_INJECT_NONDETERMINISM="$inject_flags" -DLOCKSTEP_SIMD_SCALAR="$simd_scalar")
  build_targets=(lockstep-sim lockstep-replay-verify)
  if [ "$capi" = 1 ]; then
    # The C API's DLL too, its C test suite (run below) and lockstep-bot
    # (scripts/windows-client-check.sh): the client SDK needs Asio, staged as header-only like
    # FlatBuffers.
    # -p keeps the headers' times, so a reused build folder does not rebuild what includes them.
    rm -rf "${staged:?}/asio" "${staged:?}/CLI"
    cp -rp /usr/include/asio "$staged/asio"
    cp -p /usr/include/asio.hpp "$staged/asio.hpp"
    cp -rp /usr/include/CLI "$staged/CLI" # CLI11, for lockstep-bot
    cmake_args+=(-DLOCKSTEP_CAPI=ON -DASIO_INCLUDE_DIR="$staged")
    build_targets+=(lockstep_c capi_test lockstep-bot)
  fi
  # No -g: debug information never changes the generated code, and was a third of the build
  # time. Unity builds for the tools around the sim (schema, replays, lockstep-replay-verify; the
  # sim itself is always compiled file by file, sim/CMakeLists.txt): FlatBuffers' headers are
  # parsed once per library instead of once per file. Both together: 97 -> 55 CPU s for a gcc -O2
  # target. lockstep-replay-verify rather than lockstep-replay: the same verify code without the
  # other commands and CLI11, which alone took 27 of a gcc -O2 target's 147 CPU s.
  cmake_args+=(-DCMAKE_UNITY_BUILD=ON)
  case $opt in
  0) cmake_args+=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0") ;;
  2) cmake_args+=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG") ;;
  3) cmake_args+=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG") ;;
  esac
  start_ns=$(date +%s%N)
  if { cmake "${cmake_args[@]}" && cmake --build "$dir" --target "${build_targets[@]}" -j "$build_jobs"; } >"$log" 2>&1; then
    result=ok
    # A target run under wine: its prefix is made now, once (wine's first start), so that the
    # runs, two at a time, do not both make it.
    if [ "${runner[0]:-}" = env ] && [[ "${runner[*]}" == *wine* ]]; then
      "${runner[@]}" "$dir/$exe" --help >>"$log" 2>&1 || true
    fi
    # A target that may use FMA (x86-64-v3): the sim must hold no fused multiply-add, which
    # rounds once where every other target rounds twice. -ffp-contract=off is not enough: g++ 12's
    # vectorizer once fused a quaternion product's mixed +/- lanes into vfmsubadd regardless.
    if [[ "$name" == *-v3-* ]] && command -v objdump >/dev/null; then
      fused=$(objdump -d --no-show-raw-insn "$dir/sim/liblockstep_sim.a" |
        grep -cE '[[:space:]]vfn?m(add|sub)' || true)
      if [ "$fused" != 0 ]; then
        echo "determinism-matrix: $name: $fused fused multiply-add instructions in the sim" >>"$log"
        objdump -d --no-show-raw-insn -C "$dir/sim/liblockstep_sim.a" |
          grep -E '^[0-9a-f]+ <|[[:space:]]vfn?m(add|sub)' | grep -B1 -E 'vfn?m(add|sub)' >>"$log"
        result=failed
      fi
    fi
    # The C API's own suite on the target (every entry point through the DLL): a failure there
    # fails the target's build.
    if [ "$capi" = 1 ] && ! "${runner[@]}" "$dir/capi/tests/capi_test.exe" "$root/scenes" >>"$log" 2>&1; then
      echo "determinism-matrix: capi_test failed on $name" >>"$log"
      result=failed
    fi
  else
    result=failed
  fi
  seconds=$(awk -v ns=$(($(date +%s%N) - start_ns)) 'BEGIN { printf "%.1f", ns / 1e9 }')
  echo "BUILD $name $result $seconds $(grep -c 'warning:' "$log" || true)"
  exit 0
fi

# covering_golden DIR SCENE TICKS: the name of another golden chain in DIR that runs the same
# `--scene` for at least TICKS ticks and has every line of SCENE's chain up to TICKS and more (so
# checking it checks SCENE's first TICKS ticks too); fails when there is none.
covering_golden() {
  local dir=$1 scene=$2 ticks=$3 own_scene own theirs other f
  own_scene=$(awk '/^# args:/ { for (i = 3; i < NF; i++) if ($i == "--scene") print $(i + 1) }' "$dir/$scene.txt")
  own=$(awk -v l="$ticks" '!/^#/ && $1 + 0 <= l + 0' "$dir/$scene.txt")
  [ -n "$own" ] || return 1
  for f in "$dir"/*.txt; do
    other=$(basename "$f" .txt)
    [ "$other" != "$scene" ] || continue
    awk -v s="$own_scene" -v t="$ticks" '/^# args:/ {
        for (i = 3; i < NF; i++) { if ($i == "--scene") sc = $(i + 1); if ($i == "--ticks") tk = $(i + 1) }
        ok = (sc == s && tk + 0 >= t + 0) }
      END { exit ok ? 0 : 1 }' "$f" || continue
    theirs=$(awk -v l="$ticks" '!/^#/ && $1 + 0 <= l + 0' "$f")
    # All of ours and more (so two chains can never each leave their check to the other).
    if [ -z "$(grep -vxF -f <(echo "$theirs") <<<"$own")" ] &&
      [ -n "$(grep -vxF -f <(echo "$own") <<<"$theirs")" ]; then
      echo "$other"
      return 0
    fi
  done
  return 1
}

# Internal: run one target on one scene (or golden replay, NAME.lsr); prints
# `RUN target scene status seconds cpu_seconds`.
if [ "${1:-}" = "--_run-one" ]; then
  build_root=$2 golden_dir=$3 slow_ticks=$4 replay_dir=$5 name=$6 scene=$7
  target_spec "$name"
  log="$build_root/matrix-logs/$name.$scene.run.log"
  if [[ "$scene" == *.lsr ]]; then
    # A golden replay: lockstep-replay-verify re-simulates the recorded match from its inputs
    # and compares every tick's hash with the recorded one (short matches: always in full).
    start_ns=$(date +%s%N)
    set +e
    "${runner[@]}" "$build_root/matrix-$name/$replay_exe" --quiet "$replay_dir/$scene" >"$log" 2>&1
    rc=$?
    set -e
    seconds=$(awk -v ns=$(($(date +%s%N) - start_ns)) 'BEGIN { printf "%.1f", ns / 1e9 }')
    if [ $rc -eq 0 ] && grep -q '^OK: ' "$log"; then
      status=match
    elif tick=$(grep -o -m1 'DIVERGED at tick [0-9]*' "$log"); then
      status="tick_${tick#DIVERGED at tick }"
    else
      status=error
    fi
    echo "RUN $name $scene $status $seconds $seconds"
    exit 0
  fi
  limit=()
  [ "$slow" = 0 ] || [ "$slow_ticks" = full ] || limit=(--max-ticks "$slow_ticks")
  # An injected target only has to differ somewhere: its first 600 ticks are enough (and cheap
  # under qemu); one that still matches there counts as not caught.
  ! is_injected "$name" || limit=(--max-ticks "$injected_ticks")
  # A prefix that another golden chain already checks (pile's first 600 ticks are pile_queries'
  # chain: the same scene, the same hashes, then its queries) is not run twice on a slow target.
  if [ ${#limit[@]} = 2 ] && other=$(covering_golden "$golden_dir" "$scene" "${limit[1]}"); then
    echo "RUN $name $scene match_to_${limit[1]}_in_$other 0.0 0.0"
    exit 0
  fi
  start_ns=$(date +%s%N)
  set +e
  bash "$root/scripts/check-golden.sh" --golden-dir "$golden_dir" --scene "$scene" "${limit[@]}" \
    -- "${runner[@]}" "$build_root/matrix-$name/$exe" >"$log" 2>&1
  rc=$?
  set -e
  seconds=$(awk -v ns=$(($(date +%s%N) - start_ns)) 'BEGIN { printf "%.1f", ns / 1e9 }')
  cpu=$(grep -o '[0-9.?]* s cpu' "$log" | awk '{ print $1 }' || true)
  if [ $rc -eq 0 ] && grep -q 'match up to tick' "$log"; then
    status="match_to_$(grep -o 'match up to tick [0-9]*' "$log" | awk '{ print $5 }')"
  elif [ $rc -eq 0 ]; then
    status=match
  elif tick=$(grep -o -m1 ': tick [0-9]* differs' "$log"); then
    tick=${tick#': tick '}
    status="tick_${tick%' differs'}"
  elif grep -q 'extra output' "$log"; then
    status=extra_output
  else
    status=error
  fi
  echo "RUN $name $scene $status $seconds ${cpu:-?}"
  exit 0
fi

targets=()
scenes=()
replays=()
replays_given=0
slow_ticks=full
install=1
inject=0
representative=0
build_only=0
while [ $# -gt 0 ]; do
  case "$1" in
  --targets)
    IFS=, read -r -a targets <<<"$2"
    shift 2
    ;;
  --scenes)
    IFS=, read -r -a scenes <<<"$2"
    shift 2
    ;;
  --replays)
    replays_given=1
    [ "$2" = none ] || IFS=, read -r -a replays <<<"$2"
    shift 2
    ;;
  --jobs)
    jobs=$2
    shift 2
    ;;
  --no-install)
    install=0
    shift
    ;;
  --inject-nondeterminism)
    inject=1
    shift
    ;;
  --representative)
    representative=1
    shift
    ;;
  --build-only)
    build_only=1
    shift
    ;;
  --golden-dir)
    golden_dir=$(cd "$2" && pwd)
    shift 2
    ;;
  --slow-ticks)
    slow_ticks=$2
    shift 2
    ;;
  --build-root)
    build_root=$(mkdir -p "$2" && cd "$2" && pwd)
    shift 2
    ;;
  --list)
    for t in "${normal_targets[@]}"; do
      target_spec "$t"
      echo "$t  toolchain=cmake/toolchains/$toolchain.cmake -O$opt${runner[*]:+ runner=\"${runner[*]}\"}"
    done
    for t in "${injected_targets[@]}"; do
      target_spec "$t"
      echo "$t  toolchain=cmake/toolchains/$toolchain.cmake -O$opt injected='$inject_flags' (--inject-nondeterminism)"
    done
    exit 0
    ;;
  -h | --help)
    sed -n '2,37p' "$0"
    exit 0
    ;;
  *)
    echo "determinism-matrix: unknown argument $1 (see --help)" >&2
    exit 2
    ;;
  esac
done

if [ $representative = 1 ]; then
  [ ${#targets[@]} -gt 0 ] || targets=("${representative_targets[@]}")
  injected_targets=("${representative_injected[@]}")
fi
[ ${#targets[@]} -gt 0 ] || targets=("${normal_targets[@]}")
if [ $inject = 1 ]; then
  for t in "${injected_targets[@]}"; do
    [[ " ${targets[*]} " == *" $t "* ]] || targets+=("$t")
  done
fi
for t in "${targets[@]}"; do
  target_spec "$t" || {
    echo "determinism-matrix: unknown target $t (see --list)" >&2
    exit 2
  }
  ! is_injected "$t" || inject=1 # named with --targets: still expected to be caught
done
if [ ${#scenes[@]} -eq 0 ]; then
  for f in "$golden_dir"/*.txt; do
    [ -f "$f" ] && scenes+=("$(basename "$f" .txt)")
  done
fi
if [ ${#scenes[@]} -eq 0 ]; then
  echo "determinism-matrix: no golden files in $golden_dir (scripts/update-golden.sh makes them)" >&2
  exit 1
fi
for s in "${scenes[@]}"; do
  [ -f "$golden_dir/$s.txt" ] || {
    echo "determinism-matrix: no golden file tests/golden/$s.txt" >&2
    exit 2
  }
done
if [ $replays_given = 0 ]; then
  for f in "$replay_dir"/*.lsr; do
    [ -f "$f" ] && replays+=("$(basename "$f" .lsr)")
  done
fi
for r in "${replays[@]}"; do
  [ -f "$replay_dir/$r.lsr" ] || {
    echo "determinism-matrix: no golden replay replays/golden/$r.lsr" >&2
    exit 2
  }
done
# Columns of the table: the scenes, then the replays (as NAME.lsr).
columns=("${scenes[@]}")
for r in "${replays[@]}"; do columns+=("$r.lsr"); done

total_start=$(date +%s)
if [ $install = 1 ]; then
  groups=()
  for t in "${targets[@]}"; do
    target_spec "$t"
    [[ " ${groups[*]} " == *" $group "* ]] || groups+=("$group")
  done
  bash "$root/scripts/install-matrix-toolchains.sh" "${groups[@]}"
fi

mkdir -p "$build_root/matrix-logs"
results="$build_root/matrix-logs/results.txt"
: >"$results"

# Builds: `jobs` targets side by side, each with one compile job (several targets keep both
# cores busy through their serial configure and link steps); one target alone gets them all.
echo "determinism-matrix: building ${#targets[@]} targets (${jobs} at a time)"
build_start=$(date +%s)
build_jobs=1
[ ${#targets[@]} -gt 1 ] || build_jobs=$jobs
printf '%s\n' "${targets[@]}" |
  xargs -P "$jobs" -I{} bash "$0" --_build-one {} "$build_root" "$build_jobs" | tee -a "$results"
build_s=$(($(date +%s) - build_start))
if [ $build_only = 1 ]; then
  echo "determinism-matrix: built in ${build_s} s (--build-only: no runs)"
  exit 0
fi

# Runs: every (target, scene) pair whose build succeeded, `jobs` at a time.
run_start=$(date +%s)
# Longest first, so that the two cores finish together: a rough cost of target x scene.
built=$(awk '$1 == "BUILD" && $3 == "ok" { print $2 }' "$results")
for t in "${targets[@]}"; do
  if grep -qx "$t" <<<"$built"; then
    target_spec "$t"
    case "$t" in *-O0*) tw=10 ;; aarch64-*) tw=12 ;; wasm32-*) tw=2 ;; *) tw=1 ;; esac
    [ "$slow" = 0 ] || [ "$slow_ticks" = full ] || tw=$((tw * slow_ticks / 3600 + 1))
    ! is_injected "$t" || tw=$((tw * injected_ticks / 3600 + 1))
    for s in "${columns[@]}"; do
      case "$s" in pile) sw=100 ;; pyramid) sw=50 ;; bounce) sw=1 ;; *.lsr) sw=5 ;; *) sw=10 ;; esac
      echo "$((tw * sw)) $t $s"
    done
  fi
done | sort -k1,1 -n -r -s | awk '{ print $2; print $3 }' |
  xargs -P "$jobs" -n2 bash "$0" --_run-one "$build_root" "$golden_dir" "$slow_ticks" "$replay_dir" \
    >>"$results" 2>&1 || true
run_s=$(($(date +%s) - run_start))

# The table: one row per target, one column per scene and per replay.
status=0
caught_all=1
width=$(printf '%s\n' "${targets[@]}" | awk '{ if (length($0) > w) w = length($0) } END { print w }')
cell_width() { echo $((${#1} > 12 ? ${#1} : 12)); }
printf '\n%-*s' "$width" target
for s in "${columns[@]}"; do printf '  %-*s' "$(cell_width "$s")" "$s"; done
printf '  %8s  %9s\n' build_s run_cpu_s
for t in "${targets[@]}"; do
  printf '%-*s' "$width" "$t"
  build_line=$(grep "^BUILD $t " "$results" || true)
  differs=0
  run_total=0
  for s in "${columns[@]}"; do
    if [ "$(awk '{ print $3 }' <<<"$build_line")" != ok ]; then
      cell="build_failed"
    else
      line=$(grep "^RUN $t $s " "$results" || true)
      cell=$(awk '{ print $4 }' <<<"$line")
      [ -n "$cell" ] || cell=error
      run_total=$(awk -v a="$run_total" -v b="$(awk '{ print $6 }' <<<"$line")" 'BEGIN { printf "%.1f", a + b }')
    fi
    [[ "$cell" == match* ]] || differs=1
    printf '  %-*s' "$(cell_width "$s")" "${cell//_/ }"
  done
  printf '  %8s  %9s' "$(awk '{ print $4 }' <<<"$build_line")" "$run_total"
  if is_injected "$t"; then
    if [ $differs = 1 ]; then
      printf '  (injected: caught)'
    else
      printf '  (injected: NOT caught)'
      caught_all=0
    fi
  elif [ $differs = 1 ]; then
    status=1
  fi
  printf '\n'
done

echo
echo "determinism-matrix: builds ${build_s} s, runs ${run_s} s, total $(($(date +%s) - total_start)) s on $jobs jobs; logs in $build_root/matrix-logs"
if [ $status != 0 ]; then
  echo "determinism-matrix: FAILED: a target differs from the golden hashes (logs: $build_root/matrix-logs/TARGET.SCENE.run.log)"
  exit 1
fi
if [ $inject = 1 ] && [ $caught_all = 0 ]; then
  echo "determinism-matrix: FAILED: an injected nondeterministic target matched: the matrix would miss it"
  exit 1
fi
if [ "$slow_ticks" != full ]; then
  echo "determinism-matrix: note: slow targets (-O0, qemu) were compared over their first $slow_ticks ticks only (--slow-ticks)"
fi
if [ $inject = 1 ]; then
  echo "determinism-matrix: every normal target matches every scene and replay; every injected target was caught"
else
  echo "determinism-matrix: every target matches every scene and replay"
fi

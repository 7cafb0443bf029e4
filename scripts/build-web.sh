#!/usr/bin/env bash
# Builds the browser client's wasm core with Debian's emscripten (installed by scripts/setup.sh
# when missing, never downloaded) and stages the npm package in client_sdk/web/dist:
# lockstep_core.mjs + lockstep_core.wasm (the sim, the codec, time sync and prediction) beside
# the hand-written lockstep.js / lockstep.d.ts.
# The same toolchain file, sim library and flags as the determinism matrix's wasm32 target
# (cmake/toolchains/wasm32-emscripten.cmake): -O2, -ffp-contract=off, no fast math.
# Usage: scripts/build-web.sh [--build-dir DIR] [--pack]   (--pack: also `npm pack` into DIR)
# Prints the sizes of the files a page loads, raw and gzip -9.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir="$root/build/web"
pack=0
while [ $# -gt 0 ]; do
  case "$1" in
  --build-dir)
    build_dir=$2
    shift 2
    ;;
  --pack)
    pack=1
    shift
    ;;
  *) echo "usage: $0 [--build-dir DIR] [--pack]" >&2; exit 2 ;;
  esac
done
command -v em++ >/dev/null || bash "$root/scripts/setup.sh" emscripten nodejs
# Debian's em++ finds its JS tools only with NODE_PATH set.
export NODE_PATH=/usr/share/nodejs

# Header-only dependencies staged as the matrix does: the host's /usr/include must not reach em++.
staged="$build_dir/staged-include"
mkdir -p "$staged"
for h in xxhash.h xxh3.h; do
  [ -f "/usr/include/$h" ] || continue
  cmp -s "/usr/include/$h" "$staged/$h" || cp -p "/usr/include/$h" "$staged/$h"
done
[ -d "$staged/flatbuffers" ] || cp -rp /usr/include/flatbuffers "$staged/flatbuffers"

# CMAKE_EXE_LINKER_FLAGS empty: the toolchain's node-only link flags (NODERAWFS) are for the
# matrix's command-line tools, not for a page. Configured once; ninja reconfigures on a change.
[ -f "$build_dir/build.ninja" ] || cmake -S "$root" -B "$build_dir" -G Ninja \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/wasm32-emscripten.cmake" \
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
  -DCMAKE_EXE_LINKER_FLAGS="" \
  -DLOCKSTEP_SIM_ONLY=ON -DLOCKSTEP_REPLAY_TOOL=ON -DLOCKSTEP_WEB=ON \
  -DLOCKSTEP_STAGED_INCLUDE_DIR="$staged" -DXXHASH_INCLUDE_DIR="$staged" >"$build_dir/configure.log"
cmake --build "$build_dir" --target lockstep_web -j "${WEB_BUILD_JOBS:-2}"

dist="$root/client_sdk/web/dist"
mkdir -p "$dist"
cp "$build_dir/client_sdk/web/lockstep_core.mjs" "$build_dir/client_sdk/web/lockstep_core.wasm" "$dist/"
for f in lockstep_core.wasm lockstep_core.mjs; do
  printf 'build-web: %-20s %8d B, gzip -9 %8d B\n' "$f" "$(stat -c %s "$dist/$f")" \
    "$(gzip -9 -c "$dist/$f" | wc -c)"
done
if [ "$pack" = 1 ]; then
  (cd "$root/client_sdk/web" && npm pack --silent --pack-destination "$build_dir")
fi

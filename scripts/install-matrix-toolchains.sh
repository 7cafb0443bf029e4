#!/usr/bin/env bash
# Installs the toolchains of the determinism matrix (docs/determinism.md) from Debian 12's
# archive, idempotently: apt-get runs only for packages that dpkg-query reports missing.
#
#   scripts/install-matrix-toolchains.sh [group...]   groups: native clang2 i686 aarch64 wasm mingw
#                                                      (default: all of them)
# Exit status is non-zero if a package could not be installed.
set -euo pipefail

packages_for() {
  case "$1" in
  native) echo "g++ clang clang-14 cmake ninja-build libxxhash-dev" ;;
  # A second clang beside Debian's default clang-14: the newest in bookworm/main
  # (cmake/toolchains/x86_64-clang19.cmake).
  clang2) echo "clang-19" ;;
  # qemu-user: a kernel without 32-bit x86 support runs the i686 binaries under qemu-i386.
  i686) echo "g++-i686-linux-gnu qemu-user" ;;
  aarch64) echo "g++-aarch64-linux-gnu qemu-user" ;;
  wasm) echo "emscripten nodejs" ;;
  # Windows x86-64: mingw-w64 with posix threads (std::thread for the client SDK), run by wine64.
  mingw) echo "g++-mingw-w64-x86-64-posix wine64" ;;
  *)
    echo "unknown toolchain group: $1 (native clang2 i686 aarch64 wasm mingw)" >&2
    return 1
    ;;
  esac
}

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(native clang2 i686 aarch64 wasm mingw)

missing=()
for group in "${groups[@]}"; do
  for pkg in $(packages_for "$group"); do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$pkg")
  done
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "matrix toolchains: all present (${groups[*]})"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "matrix toolchains: missing ${missing[*]}; run this script as root to install them" >&2
  exit 1
fi

start_s=$(date +%s)
echo "matrix toolchains: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "matrix toolchains: installed in $(($(date +%s) - start_s)) s"

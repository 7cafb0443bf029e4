#!/usr/bin/env bash
# Windows lockstep clients against a Linux server, each for 10 s of ticks (600 at 60 Hz) with no
# desync, under wine, joining a lockstep-server of the Linux build on loopback:
#   1. lockstep-bot built for Windows x86-64 by the determinism matrix (mingw-w64, static);
#   2. the C API's test program, linked to lockstep_c.dll (its other checks run first, through
#      the DLL), as an engine loading the DLL would join.
#
#   scripts/windows-client-check.sh [LINUX_BUILD_DIR]    default build/ci
#
# Builds the Windows target when it is missing (scripts/determinism-matrix.sh --build-only);
# exit 0 when the client passed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
linux_build=${1:-$root/build/ci}
target=win64-mingw-O2
win_build=$root/build/matrix-$target
program=$win_build/capi/tests/capi_test.exe
bot=$win_build/apps/lockstep-bot.exe
[ -x "$linux_build/apps/lockstep-server" ] || {
  echo "windows-client-check: no $linux_build/apps/lockstep-server (build the ci preset first)" >&2
  exit 2
}
if [ ! -f "$program" ] || [ ! -f "$bot" ]; then
  bash "$root/scripts/determinism-matrix.sh" --targets "$target" --build-only
fi
for f in "$program" "$bot"; do
  [ -f "$f" ] || { echo "windows-client-check: the Windows build made no $f" >&2; exit 1; }
done
start=$(date +%s)
export WINEPREFIX="$win_build/wine-prefix" WINEDEBUG=-all
# Both at once against one server (each in a room of its own): the 10 s are waiting, not work.
bash "$root/capi/tests/with_server.sh" "$linux_build/apps/lockstep-server" -- \
  bash -c 'wine=/usr/lib/wine/wine64
    "$wine" "$1" --port "$3" --room windows_bot --name windows_bot --seconds 10 --quiet &
    bot=$!
    "$wine" "$2" "$4" "$3" 600 || exit 1
    wait "$bot"' windows-client-check "$bot" "$program" @PORT@ "$root/scenes"
echo "windows-client-check: passed in $(($(date +%s) - start)) s"

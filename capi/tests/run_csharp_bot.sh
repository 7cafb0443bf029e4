#!/usr/bin/env bash
# Builds the C# example with mono's compiler and runs it against a server for 10 s of ticks.
#   run_csharp_bot.sh MCS MONO EXAMPLE_DIR LIB_DIR WORK_DIR PORT
set -euo pipefail
mcs=$1 mono=$2 example=$3 lib_dir=$4 work=$5 port=$6
mkdir -p "$work"
"$mcs" -nologo -warnaserror -out:"$work/Bot.exe" "$example/Lockstep.cs" "$example/Bot.cs"
# Mono resolves DllImport("lockstep_c") to liblockstep_c.so on the library path.
LD_LIBRARY_PATH="$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$mono" "$work/Bot.exe" "$port" 10 1

#!/usr/bin/env bash
# Rewrites the fuzzers' seed corpora (tests/fuzz/corpus, committed) from real frames and files:
# fuzz_make_seeds writes frames of every client and server message, a short replay, snapshots and
# the small built-in scenes as text; the gameplay and hulls scene files are added as they are,
# and a short replay of the hulls scene (hulls and compounds in its WorldDef).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOCKSTEP_FUZZ_BUILD:-build/fuzz}
bash scripts/fuzz.sh fuzz_record_file 0 >/dev/null  # configures and builds the fuzz tree
cmake --build "$build" --target fuzz_make_seeds >/dev/null
rm -rf tests/fuzz/corpus
"$build/tests/fuzz/fuzz_make_seeds" tests/fuzz/corpus
cp tests/scenes/gameplay.txt tests/fuzz/corpus/fuzz_scene_text/gameplay
cp tests/scenes/hulls.txt tests/fuzz/corpus/fuzz_scene_text/hulls
cp scenes/sumo_bowl.scene tests/fuzz/corpus/fuzz_scene_text/sumo_bowl
# A short replay of a world with hulls and compounds (its WorldDef carries both).
cmake --build "$build" --target lockstep-replay >/dev/null
"$build/apps/lockstep-replay" record-scripted --scene tests/scenes/hulls.txt --ticks 8 \
  tests/fuzz/corpus/fuzz_replay_file/hulls8 >/dev/null
echo "seeds: $(find tests/fuzz/corpus -type f | wc -l) files, $(du -sk tests/fuzz/corpus | cut -f1) KiB"

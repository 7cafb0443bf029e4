#!/usr/bin/env bash
# Rewrites the fuzzers' seed corpora (tests/fuzz/corpus, committed) from real frames and files:
# fuzz_make_seeds writes frames of every client and server message, a short replay, snapshots and
# the small built-in scenes as text; the scene files of tests/scenes are added as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOCKSTEP_FUZZ_BUILD:-build/fuzz}
bash scripts/fuzz.sh fuzz_record_file 0 >/dev/null  # configures and builds the fuzz tree
cmake --build "$build" --target fuzz_make_seeds >/dev/null
rm -rf tests/fuzz/corpus
"$build/tests/fuzz/fuzz_make_seeds" tests/fuzz/corpus
cp tests/scenes/gameplay.txt tests/fuzz/corpus/fuzz_scene_text/gameplay
echo "seeds: $(find tests/fuzz/corpus -type f | wc -l) files, $(du -sk tests/fuzz/corpus | cut -f1) KiB"

#!/usr/bin/env bash
# Fails when a tracked C++ file is not formatted with the repository's .clang-format
# (Debian 12's clang-format 14, installed by scripts/setup.sh). Fix with:
#   git ls-files '*.cpp' '*.h' '*.inl' | xargs clang-format -i
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
command -v clang-format >/dev/null || { echo "check-format: clang-format not installed: skipped"; exit 77; }
if ! git rev-parse --git-dir >/dev/null 2>&1; then echo "check-format: not a git checkout: skipped"; exit 77; fi
files=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] && files+=("$f")
done < <(git ls-files -z '*.cpp' '*.h' '*.inl')
[ ${#files[@]} -gt 0 ] || { echo "check-format: no C++ files tracked"; exit 0; }
# One clang-format for every file: starting it once per file took a minute on a busy machine,
# checking them all takes seconds. Each violation is a `FILE:LINE:COL: error: ...` line.
report=$(clang-format --dry-run -Werror "${files[@]}" 2>&1 >/dev/null)
rc=$?
if [ $rc = 0 ]; then
  echo "check-format: every C++ file is formatted (${#files[@]} files)"
  exit 0
fi
bad=$(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$report" | sort -u)
if [ -z "$bad" ]; then
  # clang-format itself failed (not a formatting difference): show what it said.
  echo "check-format: clang-format failed (exit $rc):"
  printf '%s\n' "$report" | head -20
  exit 1
fi
while IFS= read -r f; do echo "check-format: $f is not clang-formatted"; done <<<"$bad"
exit 1

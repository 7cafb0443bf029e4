#!/usr/bin/env bash
# Fails when a tracked C++ file is not formatted with the repository's .clang-format
# (Debian 12's clang-format 14, installed by scripts/setup.sh). Fix with:
#   git ls-files '*.cpp' '*.h' '*.inl' | xargs clang-format -i
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
command -v clang-format >/dev/null || { echo "check-format: clang-format not installed: skipped"; exit 77; }
if ! git rev-parse --git-dir >/dev/null 2>&1; then echo "check-format: not a git checkout: skipped"; exit 77; fi
bad=0
while IFS= read -r f; do
  [ -f "$f" ] || continue
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "check-format: $f is not clang-formatted"
    bad=1
  fi
done < <(git ls-files '*.cpp' '*.h' '*.inl')
[ $bad = 0 ] && echo "check-format: every C++ file is formatted"
exit $bad

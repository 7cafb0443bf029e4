#!/usr/bin/env bash
# Looks through the simulation's sources for constructs that make results differ between
# platforms, compilers or standard libraries (docs/determinism.md says why each is banned).
#
#   scripts/determinism-lint.sh [FOLDER...]     default: the repository's sim/
#
# Reads *.h *.hpp *.cpp *.cc *.inl. A line that is fine on purpose (a sort whose key is a total
# order, say) carries the comment `determinism-lint: allow` and is not reported.
# Exit status: 0 nothing found, 1 something found (each finding printed under its rule),
# 2 a folder that does not exist.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then set -- "$root/sim"; fi
for folder in "$@"; do
  [ -d "$folder" ] || { echo "determinism-lint: no folder $folder" >&2; exit 2; }
done

# One rule per line: extended regular expression, a tab, what is wrong and what to do instead.
rules=$(cat <<'RULES'
\b(std::)?(sin|cos|tan|asin|acos|atan|atan2|exp|exp2|log|log2|log10|pow|cbrt|hypot|sinh|cosh|tanh)f?[[:space:]]*\(	libm transcendental: the last bits differ between C libraries; use the sim's own approximation
\b(std::)?fmaf?[[:space:]]*\(|__builtin_fma	fused multiply-add called by hand: not bit-identical (or not available) on every target
long double	long double is 64, 80 or 128 bits depending on the platform
\bstd::unordered_(map|set|multimap|multiset)\b	unordered container: its iteration order is not portable; iterate a sorted array
\bstd::hash\b	std::hash gives different values in different standard libraries
\b(rand|srand|random_device|time|clock)[[:space:]]*\(	platform randomness or the wall clock inside the simulation
\bstd::(sort|partial_sort|nth_element)[[:space:]]*\(	std::sort family: equal keys land in an unspecified order; make the key a total order and mark the line "determinism-lint: allow", or sort stably
ffast-math|Ofast|funsafe-math	fast-math flags change float results between builds
#[[:space:]]*include[[:space:]]*<(asio|flatbuffers)	the sim depends on neither Asio nor FlatBuffers
RULES
)

status=0
while IFS=$'\t' read -r pattern why; do
  findings=$(grep -rnE --include='*.h' --include='*.hpp' --include='*.cpp' --include='*.cc' \
               --include='*.inl' -e "$pattern" "$@" 2>/dev/null | grep -v 'determinism-lint: allow')
  if [ -n "$findings" ]; then
    status=1
    printf -- '-- %s\n%s\n\n' "$why" "$findings"
  fi
done <<<"$rules"

if [ $status = 0 ]; then echo "determinism-lint: nothing found in $*"; fi
exit $status

#!/usr/bin/env bash
# Soak test of the service: a token-protected server under honest bots joining and leaving and
# hostile connections, for MINUTES (default 10). Builds nothing: run scripts/test.sh (or build
# the ci preset) first. Pass/fail criteria and figures: scripts/soak.py, docs/security.md.
#   scripts/soak.sh [MINUTES] [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$root/scripts/soak.py" --minutes "${1:-10}" --build-dir "${2:-$root/build/ci}"

#!/usr/bin/env bash
# Lints what CI cannot otherwise check without a Docker daemon or a cluster: the deployment YAML
# (yamllint, strict, .yamllint.yaml) and the shell scripts (shellcheck, warnings and errors).
# Exit 77 (skipped) when a tool is missing: scripts/setup.sh installs both.
# Usage: lint_test.sh SOURCE_DIR
set -euo pipefail
cd "$1"
for tool in yamllint shellcheck; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: '$tool' is not installed (scripts/setup.sh installs it)"
    exit 77
  fi
done
yaml=(.yamllint.yaml docker/compose.yaml docker/agones/*.yaml)
yamllint -s -c .yamllint.yaml "${yaml[@]}"
echo "yamllint: ${#yaml[@]} files clean"
# -x follows the scripts' `source scripts/lib/...` from the source root (this folder).
scripts=(scripts/*.sh scripts/lib/*.sh tests/ops/*.sh)
shellcheck -x -P SCRIPTDIR -S warning "${scripts[@]}"
echo "shellcheck: ${#scripts[@]} scripts clean"
# scripts/docker-check.sh needs a Docker daemon for its checks (not in CI), but its command line
# is checked here: bad arguments exit 2 with one line saying why, before Docker is looked for.
usage_refused() { # usage_refused EXPECTED_TEXT ARGS...: exit 2 and EXPECTED_TEXT on stderr
  local expected=$1 rc=0 err
  shift
  err=$(bash scripts/docker-check.sh "$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" != 2 ] || [[ "$err" != *"$expected"* ]]; then
    echo "FAIL: docker-check.sh $*: exit $rc, stderr '$err' (want exit 2 and '$expected')"
    exit 1
  fi
}
usage_refused "unknown argument --bogus" --bogus
usage_refused "--image needs a name" --image
usage_refused "--image needs a name" --image ""
bash scripts/docker-check.sh --help | grep -q -- '--debootstrap-base' ||
  { echo "FAIL: docker-check.sh --help does not list its options"; exit 1; }
echo "docker-check.sh: bad command lines refused with exit 2"
# scripts/desync-drill.sh refuses a missing or wrong build tree with exit 2 before building.
for args in "" "/nonexistent" "scripts"; do
  rc=0
  # shellcheck disable=SC2086  # "" must become no argument at all
  bash scripts/desync-drill.sh $args >/dev/null 2>&1 || rc=$?
  [ "$rc" = 2 ] || { echo "FAIL: desync-drill.sh $args: exit $rc, want 2"; exit 1; }
done
echo "desync-drill.sh: bad build trees refused with exit 2"

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

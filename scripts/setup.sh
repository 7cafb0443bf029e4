#!/usr/bin/env bash
# Installs the Debian 12 packages lockstep builds with, only those that are missing.
# Idempotent: when everything is present it makes no network call and changes nothing.
# Usage: scripts/setup.sh [extra-package...]
# Optional, not installed by default: libbullet-dev, for the side-by-side comparison with
# Bullet 3 (lockstep-bench-bullet, scripts/bench-bullet.sh): scripts/setup.sh libbullet-dev
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config git ca-certificates
  libgtest-dev libgmock-dev libbenchmark-dev  # tests and benchmarks
  libxxhash-dev                               # state hash (XXH3), used header-only by sim
  libasio-dev                                 # standalone Asio: the network service
  libwebsocketpp-dev                          # WebSocket listener for browser clients (header-only)
  libflatbuffers-dev flatbuffers-compiler     # wire protocol and replay files
  libcli11-dev                                # command-line parsing of the service tools
  libspdlog-dev                               # levelled, timestamped logs of the service
  clang-format                                # the project's formatting (.clang-format)
  lld                                         # the linker of the ci and asan presets (links 2-3x faster)
  tmux                                        # the sumo terminal client's net test drives it in tmux
  prometheus curl                             # ops tests: a real Prometheus scrapes /metrics (promtool too)
  yamllint shellcheck                         # ops lint: docker/ YAML and scripts/*.sh
  libsodium-dev                               # join tokens: HMAC-SHA512-256 (crypto_auth)
  libtinyobjloader-dev libpng-dev            # level files: OBJ meshes, 16-bit PNG heightfields
  clang-14 libclang-rt-14-dev                 # libFuzzer + sanitizers of tests/fuzz (scripts/fuzz.sh)
  chromium python3                            # the replay viewer's browser test (headless)
  mono-mcs mono-runtime                       # the C API's C# example, built and run by ctest
)
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install packages" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"

#!/usr/bin/env bash
# Builds docker/Dockerfile.server and checks the image the way an operator would use it
# (docs/deploy.md, "Docker"): not part of .ci/run, which needs no Docker.
#
#   scripts/docker-check.sh [options]
#     --image NAME          image tag to build and check (default: lockstep-server:check)
#     --no-build            check an image that is already built
#     --compose             also build and bring up docker/compose.yaml (server + 4 bots) with
#                           `docker compose` or Debian's `docker-compose`, see the four bots and no
#                           desync in the server's /metrics (port 9100), and take it down again
#     --debootstrap-base    when debian:12 or debian:12-slim is not in the local image store,
#                           make it from Debian's archive with debootstrap (for a daemon that
#                           cannot pull from a registry); see docs/deploy.md
#
# What it checks, in order, and stops at the first failure (exit 1; 2 when Docker or a tool it
# needs is missing, or on a usage error):
#   1. the image builds; it runs as uid 10001, exposes 7777 and 9100, has a HEALTHCHECK;
#   2. a container started from it turns `healthy` (its HEALTHCHECK asks /healthz);
#   3. a lockstep-bot from the same image, in the container's network, plays 5 s of a room and
#      verifies every tick (0 desyncs, 0 errors);
#   4. /metrics answers on the published port, with lockstep_up 1 (and passes
#      `promtool check metrics` when promtool is installed);
#   5. `docker stop` (SIGTERM) while a second bot plays: the server exits 0, prints its summary
#      and leaves the room's replay window in /var/lib/lockstep/replays.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
image=lockstep-server:check
build=1
compose=0
debootstrap_base=0
while [ $# -gt 0 ]; do
  case "$1" in
  --image)
    if [ $# -lt 2 ] || [ -z "$2" ]; then
      echo "docker-check: --image needs a name (see --help)" >&2
      exit 2
    fi
    image=$2
    shift 2
    ;;
  --no-build)
    build=0
    shift
    ;;
  --compose)
    compose=1
    shift
    ;;
  --debootstrap-base)
    debootstrap_base=1
    shift
    ;;
  -h | --help)
    sed -n '2,24p' "$0"
    exit 0
    ;;
  *)
    echo "docker-check: unknown argument $1 (see --help)" >&2
    exit 2
    ;;
  esac
done

say() { echo "docker-check: $*"; }
fail() {
  echo "docker-check: FAILED: $*" >&2
  exit 1
}
# metric PORT NAME: the value of an unlabelled series on 127.0.0.1:PORT/metrics (empty if none).
metric() {
  curl -fsS "http://127.0.0.1:$1/metrics" 2>/dev/null | sed -n "s/^$2 \([0-9]*\)\$/\1/p"
}
need() {
  command -v "$1" >/dev/null || {
    echo "docker-check: needs $1 ($2)" >&2
    exit 2
  }
}
need docker "Debian package docker.io"
need curl "Debian package curl"
docker info >/dev/null 2>&1 || {
  echo "docker-check: no Docker daemon answers (docker info failed)" >&2
  exit 2
}

work=$(mktemp -d)
containers=()
cleanup() {
  for c in "${containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# ---- base images from Debian's archive -------------------------------------------------------
# Debian's own images are debootstrap's minbase variant with files a container does not need
# removed; -slim also drops documentation, man pages and locales. Here both tags get the same
# minbase tree with those removed: what the Dockerfile relies on (apt, libstdc++6, libgcc-s1) is
# in it.
if [ $debootstrap_base = 1 ]; then
  for tag in debian:12 debian:12-slim; do
    docker image inspect "$tag" >/dev/null 2>&1 && continue
    if [ ! -d "$work/rootfs" ]; then
      need debootstrap "Debian package debootstrap"
      say "making $tag from Debian's archive (debootstrap --variant=minbase bookworm)"
      debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian \
        >"$work/debootstrap.log" 2>&1 || {
        tail -n 20 "$work/debootstrap.log" >&2
        fail "debootstrap failed"
      }
      rm -rf "$work/rootfs/usr/share/doc/"* "$work/rootfs/usr/share/man/"* \
        "$work/rootfs/usr/share/locale/"* "$work/rootfs/var/cache/apt/"*.bin \
        "$work/rootfs/var/lib/apt/lists/"*
      # The suites Debian's images list: the release, its updates and its security fixes.
      printf 'deb http://deb.debian.org/debian %s main\n' bookworm bookworm-updates \
        >"$work/rootfs/etc/apt/sources.list"
      echo 'deb http://deb.debian.org/debian-security bookworm-security main' \
        >>"$work/rootfs/etc/apt/sources.list"
    fi
    tar -C "$work/rootfs" -c . | docker import -c 'CMD ["bash"]' - "$tag" >/dev/null
    say "imported $tag"
  done
fi

# ---- 1. build and inspect ----------------------------------------------------------------------
if [ $build = 1 ]; then
  say "building $image from docker/Dockerfile.server"
  start=$(date +%s)
  docker build -f "$root/docker/Dockerfile.server" -t "$image" "$root" >"$work/build.log" 2>&1 ||
    {
      tail -n 30 "$work/build.log" >&2
      fail "docker build failed"
    }
  say "built in $(($(date +%s) - start)) s"
fi
docker image inspect "$image" >/dev/null 2>&1 || fail "no image $image"
size=$(docker image inspect -f '{{.Size}}' "$image")
user=$(docker image inspect -f '{{.Config.User}}' "$image")
ports=$(docker image inspect -f '{{range $p, $v := .Config.ExposedPorts}}{{$p}} {{end}}' "$image")
health=$(docker image inspect -f '{{if .Config.Healthcheck}}{{join .Config.Healthcheck.Test " "}}{{end}}' "$image")
uid=$(docker run --rm --entrypoint id "$image" -u)
say "image $image: $((size / 1000000)) MB, user $user (uid $uid), ports $ports, healthcheck: $health"
[ "$uid" = 10001 ] || fail "the image runs as uid $uid, not the non-root 10001"
[[ " $ports" == *" 7777/tcp "* && " $ports" == *" 9100/tcp "* ]] || fail "7777 and 9100 are not both exposed"
[[ "$health" == *"/healthz"* ]] || fail "no HEALTHCHECK on /healthz"

# ---- 2. a server container turns healthy ----------------------------------------------------------
server=lockstep-check-$$
containers+=("$server")
docker run -d --name "$server" -p 127.0.0.1::7777 -p 127.0.0.1::9100 "$image" >/dev/null
state=""
for _ in $(seq 120); do
  state=$(docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}' "$server")
  [ "$state" = "running healthy" ] && break
  [[ "$state" == running* ]] || break
  sleep 0.5
done
[ "$state" = "running healthy" ] || {
  docker logs "$server" 2>&1 | tail -n 20 >&2
  fail "the server container is '$state', not 'running healthy', after 60 s"
}
metrics_port=$(docker port "$server" 9100/tcp | head -n 1 | awk -F: '{ print $NF }')
say "server container healthy; metrics on 127.0.0.1:$metrics_port"

# ---- 3. a bot from the same image plays and verifies ---------------------------------------------
bot() { # bot NAME SECONDS: lockstep-bot in the server container's network namespace
  docker run --rm --network "container:$server" --entrypoint lockstep-bot "$image" \
    --host 127.0.0.1 --port 7777 --room check --name "$1" --seconds "$2" --quiet
}
line=$(bot check-bot 5 | grep '^ticks_verified=' || true)
say "bot: ${line:-no summary line}"
ticks=$(sed -n 's/.*ticks_verified=\([0-9]*\).*/\1/p' <<<"$line")
[ "${ticks:-0}" -gt 0 ] || fail "the bot verified no tick"
[[ "$line" == *" desyncs=0 "* && "$line" == *" errors=0 "* ]] || fail "the bot saw desyncs or errors"

# ---- 4. /metrics from the host -------------------------------------------------------------------
curl -fsS "http://127.0.0.1:$metrics_port/metrics" >"$work/metrics.txt" || fail "GET /metrics failed"
grep -qx 'lockstep_up 1' "$work/metrics.txt" || fail "/metrics has no 'lockstep_up 1'"
if command -v promtool >/dev/null; then
  promtool check metrics <"$work/metrics.txt" >/dev/null 2>&1 || fail "promtool check metrics"
  say "/metrics: $(wc -c <"$work/metrics.txt") bytes, promtool check metrics passes"
else
  say "/metrics: $(wc -c <"$work/metrics.txt") bytes (promtool not installed: not linted)"
fi

# ---- 5. SIGTERM while a room plays ---------------------------------------------------------------
bot stop-bot 60 >"$work/stop-bot.out" 2>&1 &
bot_pid=$!
# Joins counted since start: the first bot was one, so two means this one is in its room (the
# open-clients gauge alone could still show the first bot, published before it left).
joined=0
for _ in $(seq 150); do
  joined=$(metric "$metrics_port" lockstep_clients_joined_total)
  [ "${joined:-0}" -ge 2 ] && break
  sleep 0.2
done
[ "${joined:-0}" -ge 2 ] || fail "the second bot did not join within 30 s"
docker stop -t 10 "$server" >/dev/null
exit_code=$(docker inspect -f '{{.State.ExitCode}}' "$server")
wait "$bot_pid" || true
docker logs "$server" >"$work/server.out" 2>"$work/server.err"
[ "$exit_code" = 0 ] || fail "the server exited $exit_code on SIGTERM"
grep -q '^summary {' "$work/server.out" || fail "no summary line on stdout after SIGTERM"
docker cp "$server:/var/lib/lockstep/replays" "$work/replays"
dumps=$(find "$work/replays" -name 'shutdown-*.lsrp' | wc -l)
[ "$dumps" -ge 1 ] || fail "no shutdown replay dump in /var/lib/lockstep/replays"
stop_line=$(grep '^ticks_verified=' "$work/stop-bot.out" | cut -d' ' -f1-2 || true)
[ -n "$stop_line" ] || stop_line="no summary line; its last output: $(tail -n 3 "$work/stop-bot.out" | tr '\n' ' ')"
say "docker stop: exit 0, summary printed, $dumps shutdown replay dump(s); the bot playing then: ${stop_line:-no summary line}"

# ---- compose ---------------------------------------------------------------------------------------
if [ $compose = 1 ]; then
  if docker compose version >/dev/null 2>&1; then
    compose_cmd=(docker compose)
  elif command -v docker-compose >/dev/null; then
    compose_cmd=(docker-compose)
  else
    echo "docker-check: --compose needs docker compose or docker-compose" >&2
    exit 2
  fi
  project=lockstep-check-$$
  compose_file="$root/docker/compose.yaml"
  compose_down() { "${compose_cmd[@]}" -p "$project" -f "$compose_file" down -v >/dev/null 2>&1 || true; }
  trap 'compose_down; cleanup' EXIT
  say "compose: ${compose_cmd[*]} up (server + 4 bots)"
  "${compose_cmd[@]}" -p "$project" -f "$compose_file" up -d --build >"$work/compose.log" 2>&1 ||
    {
      tail -n 20 "$work/compose.log" >&2
      fail "compose up failed"
    }
  clients=""
  for _ in $(seq 120); do
    clients=$(metric 9100 lockstep_clients)
    [ "${clients:-0}" -ge 4 ] && break
    sleep 0.5
  done
  [ "${clients:-0}" -ge 4 ] || {
    "${compose_cmd[@]}" -p "$project" -f "$compose_file" logs --tail 20 >&2 || true
    fail "compose: the server has ${clients:-no} clients, not 4, after 60 s"
  }
  desyncs=$(metric 9100 lockstep_desync_reports_total)
  [ "${desyncs:-x}" = 0 ] || fail "compose: lockstep_desync_reports_total is ${desyncs:-missing}, not 0"
  say "compose: the server reports lockstep_clients $clients, lockstep_desync_reports_total 0"
  compose_down
fi

say "all checks passed"

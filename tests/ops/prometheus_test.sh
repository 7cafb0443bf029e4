#!/usr/bin/env bash
# A real Prometheus (Debian's package) scrapes lockstep-server's /metrics: the server and one
# bot run, Prometheus gets a generated scrape config (every 1 s, its own port and temporary
# storage), and its HTTP API must report the bot as the server's one client and the room's ticks
# going up. `promtool check metrics` must accept the exposition. Exit 77 (skipped) when the
# prometheus package is not installed: scripts/setup.sh installs it.
# Usage: prometheus_test.sh LOCKSTEP_SERVER LOCKSTEP_BOT
set -euo pipefail
server_bin=$(realpath "$1")
bot_bin=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"

for tool in prometheus promtool curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: '$tool' is not installed (scripts/setup.sh installs the prometheus package)"
    exit 77
  fi
done

start_server --empty-room-grace-ms 10000
spawn bot "$bot_bin" --port "$port" --room scraped --seconds 120
wait_until "the bot in the server's counters" 60 metric_is lockstep_clients 1

# The exposition passes Prometheus's own linter.
http_get "http://127.0.0.1:$metrics_port/metrics" >"$work/metrics.txt"
[ -s "$work/metrics.txt" ] || fail "empty /metrics"
promtool check metrics <"$work/metrics.txt" >"$work/promtool.log" 2>&1 ||
  fail "promtool check metrics rejected the exposition"
echo "promtool check metrics: ok ($(grep -vc '^#' "$work/metrics.txt") samples)"

# Prometheus on a free port: ask the kernel for one by binding to port 0 is not possible from
# bash, so try ports until one is free and Prometheus comes up on it.
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: lockstep
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
YAML
prom_port=""
for attempt in 1 2 3 4 5; do
  candidate=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
  if (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then continue; fi  # taken
  rm -rf "$work/tsdb"
  spawn prometheus prometheus --config.file="$work/prometheus.yml" \
    --storage.tsdb.path="$work/tsdb" --web.listen-address="127.0.0.1:$candidate"
  prom_pid=$last_pid
  for _ in $(seq 300); do
    if curl -fsS --max-time 2 "http://127.0.0.1:$candidate/-/ready" >/dev/null 2>&1; then
      prom_port=$candidate
      break
    fi
    kill -0 "$prom_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$prom_port" ] && break
  kill -TERM "$prom_pid" 2>/dev/null || true
  wait "$prom_pid" 2>/dev/null || true
  echo "prometheus did not come up on port $candidate (attempt $attempt); trying another"
done
[ -n "$prom_port" ] || fail "prometheus did not start"
echo "prometheus ready on 127.0.0.1:$prom_port, scraping 127.0.0.1:$metrics_port"

# query EXPR: the value of the first sample of an instant query (empty when none).
query() {
  curl -fsS --max-time 5 -G "http://127.0.0.1:$prom_port/api/v1/query" \
    --data-urlencode "query=$1" 2>/dev/null |
    sed -n 's/.*"value":\[[^,]*,"\([^"]*\)"\].*/\1/p'
}
query_is() { [ "$(query "$1")" = "$2" ]; }
wait_until "a successful scrape (up == 1)" 60 query_is 'up{job="lockstep"}' 1
wait_until "lockstep_clients == 1 in Prometheus" 60 query_is lockstep_clients 1
echo "prometheus: lockstep_clients = $(query lockstep_clients)"
ticks_positive() {
  local v
  v=$(query 'lockstep_ticks_total')
  [ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v > 0) }'
}
wait_until "lockstep_ticks_total > 0 in Prometheus" 60 ticks_positive
echo "prometheus: lockstep_ticks_total = $(query lockstep_ticks_total)"
echo "prometheus: lateness p99 (histogram_quantile) = $(query 'histogram_quantile(0.99, lockstep_tick_lateness_seconds_bucket)') s"
echo "ok"

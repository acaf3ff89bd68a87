#!/usr/bin/env bash
# The durable jobs' rate against what crewd's workers allow: one crewd with
# the embedded JetStream server (-workers, default 32), then crewload posts
# sleep jobs of 5-20 ms from 64 clients and waits for every one to end. It
# prints jobs/s accepted, jobs/s ended (from the first post to the last
# record's "finished"), the ideal (workers / mean sleep), the share of it
# measured, and the p50/p99 of POST /v1/jobs.
# Usage: service/scripts/jobs-bench.sh [-workers 32] [-requests 3000] [-rounds 3]
set -euo pipefail
cd "$(dirname "$0")/.."
workers=32 requests=3000 rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    -workers) workers=$2; shift 2 ;;
    -requests) requests=$2; shift 2 ;;
    -rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [-workers N] [-requests N] [-rounds N]" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/crewd" ./cmd/crewd
go build -o "$tmp/crewload" ./cmd/crewload
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for round in $(seq "$rounds"); do
  http=$(free_port) admin=$(free_port)
  "$tmp/crewd" -http-addr "127.0.0.1:$http" -admin-addr "127.0.0.1:$admin" -workers "$workers" \
    -data-dir "$tmp/data$round" -shutdown-delay 0s -log-level warn 2>"$tmp/crewd$round.err" >"$tmp/crewd$round.log" &
  pid=$!
  for _ in $(seq 300); do
    curl -fs "http://127.0.0.1:$http/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "== round $round: crewd -workers $workers (embedded JetStream), $requests sleep jobs of 5-20 ms from 64 clients"
  "$tmp/crewload" -url "http://127.0.0.1:$http" -mode jobs -requests "$requests" -concurrency 64 \
    -sleep 5ms-20ms -wait -workers "$workers" -progress 0
  kill -TERM "$pid"
  wait "$pid" || true
done

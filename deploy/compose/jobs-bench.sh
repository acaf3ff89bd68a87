#!/usr/bin/env bash
# The durable jobs' rate on the compose cluster (R3): the images built, the
# compose file up under a project of its own (three nats-servers, the jobs
# stream and bucket on all three, three crewd replicas of 16 workers, the
# trace collector), then crewload posts sleep jobs of 5-20 ms from 64
# clients to crewd1 while all three replicas run them, and waits for every
# one to end. It prints jobs/s accepted, jobs/s ended, the ideal (48
# workers / mean sleep), the share of it measured, and the p50/p99 of
# POST /v1/jobs. The project is torn down ("down -v") at the end.
# Tracing stays as the compose file sets it (every request sampled);
# CREW_TRACE_RATIO=0.1 or CREW_OTLP_ENDPOINT= change that.
# Usage: deploy/compose/jobs-bench.sh [-requests 3000] [-rounds 3]
set -euo pipefail
cd "$(dirname "$0")"
requests=3000 rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    -requests) requests=$2; shift 2 ;;
    -rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [-requests N] [-rounds N]" >&2; exit 2 ;;
  esac
done
dc=(docker compose)
"${dc[@]}" version >/dev/null 2>&1 || dc=(docker-compose)
project=crewjobsbench$$
tmp=$(mktemp -d)
trap '"${dc[@]}" -p "$project" down -v -t 5 >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
./build-images.sh crewd:jobsbench crew-nats:jobsbench crew-otelcol:jobsbench >/dev/null
(cd ../../service && go build -o "$tmp/crewload" ./cmd/crewload)
export CREWD_IMAGE=crewd:jobsbench NATS_IMAGE=crew-nats:jobsbench OTELCOL_IMAGE=crew-otelcol:jobsbench
for v in CREWD1_PORT CREWD2_PORT CREWD3_PORT CREWD1_ADMIN_PORT CREWD2_ADMIN_PORT CREWD3_ADMIN_PORT \
  NATS1_CLIENT_PORT NATS2_CLIENT_PORT NATS3_CLIENT_PORT NATS1_MONITOR_PORT NATS2_MONITOR_PORT NATS3_MONITOR_PORT OTELCOL_PORT; do
  export "$v="
done
"${dc[@]}" -p "$project" up -d >/dev/null 2>&1
url=
for s in crewd1 crewd2 crewd3; do
  for _ in $(seq 240); do
    a=$(docker port "$("${dc[@]}" -p "$project" ps -q "$s")" 8080/tcp 2>/dev/null | head -1) || true
    if [ -n "$a" ] && curl -fs "http://$a/readyz" >/dev/null 2>&1; then break; fi
    a=
    sleep 0.5
  done
  [ -n "$a" ] || { echo "jobs-bench: $s not ready" >&2; "${dc[@]}" -p "$project" logs --tail 20 >&2; exit 1; }
  [ "$s" = crewd1 ] && url="http://$a"
done
for round in $(seq "$rounds"); do
  echo "== round $round: 3 crewd x 16 workers on an R3 JetStream cluster, $requests sleep jobs of 5-20 ms from 64 clients to crewd1"
  "$tmp/crewload" -url "$url" -mode jobs -requests "$requests" -concurrency 64 -sleep 5ms-20ms -wait -workers 48 -progress 0
done

#!/usr/bin/env bash
# The durable jobs' rate against what crewd's workers allow: one crewd with
# the embedded JetStream server (-workers, default 32), then crewload posts
# sleep jobs of 5-20 ms from 64 clients and waits for every one to end. It
# prints jobs/s accepted, jobs/s ended (from the first post to the last
# record's "finished"), the ideal (workers / mean sleep), the share of it
# measured, and the p50/p99 of POST /v1/jobs.
# -trace LIST runs each round once per setting, interleaved: off (no
# OTEL_* variable), or a sampled share (0.1, 1) of traces sent over
# OTLP/HTTP to an OpenTelemetry Collector on loopback (the compose
# cluster's, built by deploy/compose/build-images.sh; on the same cores, so
# its work is in the figure too): what tracing costs.
# crewd runs with GOMEMLIMIT 1GiB unless set, as in a container of that
# limit (the Kubernetes files set it from limits.memory), and so with the
# GC percent it takes under a limit.
# Usage: service/scripts/jobs-bench.sh [-workers 32] [-requests 3000] [-rounds 3] [-trace off,0.1,1]
set -euo pipefail
cd "$(dirname "$0")/.."
workers=32 requests=3000 rounds=3 traces=off
while [ $# -gt 0 ]; do
  case "$1" in
    -workers) workers=$2; shift 2 ;;
    -requests) requests=$2; shift 2 ;;
    -rounds) rounds=$2; shift 2 ;;
    -trace) traces=$2; shift 2 ;;
    *) echo "usage: $0 [-workers N] [-requests N] [-rounds N] [-trace off,0.1,1]" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/crewd" ./cmd/crewd
go build -o "$tmp/crewload" ./cmd/crewload
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
otlp=
if [ "$traces" != off ]; then
  otelcol="${CREW_DEPLOY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crew-deploy}/bin/otelcol-crew"
  if ! [ -x "$otelcol" ]; then
    echo "jobs-bench: -trace needs the collector: run deploy/compose/build-images.sh first" >&2
    exit 2
  fi
  otlp=$(free_port)
  cat >"$tmp/otelcol.yaml" <<EOF
receivers: {otlp: {protocols: {http: {endpoint: "127.0.0.1:$otlp"}}}}
processors: {batch: {}}
exporters: {debug: {verbosity: basic}}
service:
  pipelines: {traces: {receivers: [otlp], processors: [batch], exporters: [debug]}}
  telemetry: {metrics: {level: none}, logs: {level: warn}}
EOF
  "$otelcol" --config "file:$tmp/otelcol.yaml" >"$tmp/otelcol.log" 2>&1 &
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$otlp/v1/traces" && break
    sleep 0.1
  done
fi
for round in $(seq "$rounds"); do
  for trace in ${traces//,/ }; do
    env=()
    if [ "$trace" != off ]; then
      env=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$otlp" OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG="$trace")
    fi
    http=$(free_port) admin=$(free_port)
    env GOMEMLIMIT="${GOMEMLIMIT:-1GiB}" "${env[@]}" "$tmp/crewd" -http-addr "127.0.0.1:$http" -admin-addr "127.0.0.1:$admin" -workers "$workers" \
      -data-dir "$tmp/data$round$trace" -shutdown-delay 0s -log-level warn 2>"$tmp/crewd$round.err" >"$tmp/crewd$round.log" &
    pid=$!
    for _ in $(seq 300); do
      curl -fs "http://127.0.0.1:$http/readyz" >/dev/null 2>&1 && break
      sleep 0.1
    done
    echo "== round $round, tracing $trace: crewd -workers $workers (embedded JetStream), $requests sleep jobs of 5-20 ms from 64 clients"
    "$tmp/crewload" -url "http://127.0.0.1:$http" -mode jobs -requests "$requests" -concurrency 64 \
      -sleep 5ms-20ms -wait -workers "$workers" -progress 0
    kill -TERM "$pid"
    wait "$pid" || true
  done
done

#!/usr/bin/env bash
# crewd's factorial batches under a CPU quota below two CPUs: the image run
# with docker run --cpus 0.5 and --cpus 1, each with the pool bound Go's
# GOMAXPROCS gives there (2) and with the quota rounded down (1), driven at a
# steady rate (crewload -rate, open loop) below what the smaller quota
# serves; prints p50/p99/p99.9/max per cell, the requests crewload sent
# late, the throttled periods the container's cgroup counted (cpu.stat)
# and the host's load average (a busy host blurs a quota's effect), rounds
# interleaved.
# Usage: service/scripts/quota-bench.sh [-rate 150] [-duration 20s] [-rounds 3] [-numbers 1024] [-cpus "0.5 1"] [-variants "2 1 1p"]
set -euo pipefail
cd "$(dirname "$0")/.."
rate=150 duration=20s rounds=3 numbers=1024 cpuses="0.5 1" variants="2 1 1p"
while [ $# -gt 0 ]; do
  case "$1" in
    -rate) rate=$2; shift 2 ;;
    -duration) duration=$2; shift 2 ;;
    -rounds) rounds=$2; shift 2 ;;
    -numbers) numbers=$2; shift 2 ;;
    -cpus) cpuses=$2; shift 2 ;;
    -variants) variants=$2; shift 2 ;;
    *) echo "usage: $0 [-rate N] [-duration D] [-rounds N] [-numbers N] [-cpus LIST] [-variants LIST]" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
name=crewd-quota-$$
trap 'docker rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
tag=$(scripts/build-image.sh crewd:quota)
go build -o "$tmp/crewload" ./cmd/crewload
echo "| round | --cpus | crewd's CPUQuota | workers | GOMAXPROCS | req/s | p50 | p99 | p99.9 | max | late | throttled periods | throttled time | host load |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for round in $(seq "$rounds"); do
  for cpus in $cpuses; do
    # 2: Go's GOMAXPROCS there; 1: the quota rounded down (crew.CPUBound);
    # 1p: that, and GOMAXPROCS=1 for the whole process.
    for variant in $variants; do
      workers=${variant%p}
      procsEnv=()
      [ "$variant" = 1p ] && procsEnv=(-e GOMAXPROCS=1)
      docker rm -f "$name" >/dev/null 2>&1 || true
      docker run -d --name "$name" --cpus "$cpus" -p 127.0.0.1::8080 -e CREW_NATS_URL=off -e CREW_WORKERS="$workers" \
        "${procsEnv[@]}" "$tag" >/dev/null
      # The container's own address when the host reaches it (no
      # docker-proxy in the path, one process less on the host's CPUs),
      # else the published port.
      addr=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$name"):8080
      for _ in $(seq 100); do curl -fs "http://$addr/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
      if ! curl -fs "http://$addr/readyz" >/dev/null 2>&1; then
        addr=127.0.0.1:$(docker port "$name" 8080/tcp | head -1 | sed 's/.*://')
        for _ in $(seq 100); do curl -fs "http://$addr/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
      fi
      procs=$(docker logs "$name" 2>&1 | sed -n 's/.*"gomaxprocs":\([0-9]*\).*/\1/p' | head -1)
      id=$(docker inspect -f '{{.Id}}' "$name")
      cg=""
      for d in $(find /sys/fs/cgroup -maxdepth 4 -type d -name "*$id*" 2>/dev/null); do
        if grep -qs nr_throttled "$d/cpu.stat"; then cg=$d; break; fi
      done
      quota=$(docker logs "$name" 2>&1 | sed -n 's/.*"cpu_quota":"\([^"]*\)".*/\1/p' | head -1)
      out=$("$tmp/crewload" -url "http://$addr" -mode factorial -numbers "$numbers" -rate "$rate" \
        -duration "$duration" -concurrency 32 -progress 0)
      stat=$(cat "$cg/cpu.stat" 2>/dev/null || true)
      periods=$(echo "$stat" | awk '$1=="nr_throttled"{print $2}')
      throttled=$(echo "$stat" | awk '$1=="throttled_usec"{printf "%.2fs", $2/1e6} $1=="throttled_time"{printf "%.2fs", $2/1e9}')
      reqs=$(echo "$out" | awk '/^requests/{print $NF}')
      lat=$(echo "$out" | awk '/^latency/{print $3" | "$5" | "$7" | "$9}')
      late=$(echo "$out" | awk '$1=="late"{print $2}')
      load=$(cut -d' ' -f1 /proc/loadavg)
      echo "| $round | $cpus | ${quota:-?} | $workers | ${procs:-?} | $reqs | $lat | ${late:-0} | ${periods:-?} | ${throttled:-?} | $load |"
      docker rm -f "$name" >/dev/null
    done
  done
done

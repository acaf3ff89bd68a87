#!/usr/bin/env bash
# quotapool's grid: rounds x --cpus x bound (GOMAXPROCS, the default, and
# crew.CPUBound), Poisson arrivals at 70 % of the quota, ~2 ms tasks,
# rounds interleaved; one line per cell with the container's cpu.stat and
# the host's load average (a busy host blurs a quota's effect).
# Usage: bench/cmd/quotapool/run.sh [-rounds 3] [-duration 30s] [-iters 800]
set -euo pipefail
cd "$(dirname "$0")"
rounds=3 duration=30s iters=800
while [ $# -gt 0 ]; do
  case "$1" in
    -rounds) rounds=$2; shift 2 ;;
    -duration) duration=$2; shift 2 ;;
    -iters) iters=$2; shift 2 ;;
    *) echo "usage: $0 [-rounds N] [-duration D] [-iters N]" >&2; exit 2 ;;
  esac
done
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$ctx/quotapool" .
printf 'FROM scratch\nCOPY quotapool /quotapool\nENTRYPOINT ["/quotapool"]\n' >"$ctx/Dockerfile"
DOCKER_BUILDKIT=0 docker build -q -t quotapool:dev "$ctx" >/dev/null 2>&1 || docker build -q -t quotapool:dev "$ctx" >/dev/null
task=$("$ctx/quotapool" -calibrate -iters "$iters")
echo "one task on this host, unthrottled: $task"
for round in $(seq "$rounds"); do
  for spec in "0.5 175" "1 350"; do # 70 % of the quota at ~2 ms a task
    set -- $spec
    for w in "" quota; do
      out=$(docker run --rm --cpus "$1" quotapool:dev -rate "$2" -iters "$iters" -duration "$duration" -poisson ${w:+-workers $w} 2>&1 | tr '\n' ' ')
      echo "round $round cpus $1 rate $2 workers ${w:-default} $out load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done

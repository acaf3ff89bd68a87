#!/usr/bin/env bash
# The soak: one crewd with the embedded JetStream server under a steady
# load of short jobs for a long time, to show that bookkeeping never
# refuses work and that nothing grows without bound. crewload posts sleep
# jobs of -sleep at -rate jobs/s from 64 clients for -duration; every
# -every seconds the script prints a row: the second, jobs accepted (202)
# and refused (503) so far, the jobs waiting in the stream, crewd's RSS and
# the size of its data directory. At the end crewload's summary, then
# whether every accepted job ended (crewd's count of succeeded runs: the
# records of jobs that ended long ago have expired, as they should).
# -ref REV runs the crewd of another commit (built from a git worktree),
# to compare: the main before the records were kept by state refused jobs
# once its bucket held -job-records records (pass -args "-job-records 300"
# to see it in seconds).
# Usage: service/scripts/soak.sh [-rate 1000] [-duration 30m] [-sleep 1ms] [-every 60] [-ref REV] [-args "crewd flags"]
set -euo pipefail
cd "$(dirname "$0")/.."
rate=1000 duration=30m sleep=1ms every=60 ref= extra=
while [ $# -gt 0 ]; do
  case "$1" in
    -rate) rate=$2; shift 2 ;;
    -duration) duration=$2; shift 2 ;;
    -sleep) sleep=$2; shift 2 ;;
    -every) every=$2; shift 2 ;;
    -ref) ref=$2; shift 2 ;;
    -args) extra=$2; shift 2 ;;
    *) echo "usage: $0 [-rate N] [-duration D] [-sleep D] [-every D] [-ref REV] [-args \"crewd flags\"]" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  if [ -n "$ref" ]; then git -C .. worktree remove --force "$tmp/src" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
src=.
if [ -n "$ref" ]; then
  git -C .. worktree add --detach "$tmp/src" "$ref" >/dev/null
  src="$tmp/src/service"
fi
(cd "$src" && go build -o "$tmp/crewd" ./cmd/crewd)
go build -o "$tmp/crewload" ./cmd/crewload
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http=$(free_port) admin=$(free_port)
# shellcheck disable=SC2086 # -args is a list of flags
"$tmp/crewd" -http-addr "127.0.0.1:$http" -admin-addr "127.0.0.1:$admin" -data-dir "$tmp/data" -workers 32 \
  -queue 4096 $extra >"$tmp/crewd.log" 2>&1 &
crewd=$!
for _ in $(seq 300); do
  curl -sf -o /dev/null "http://127.0.0.1:$http/readyz" && break
  sleep 0.1
done
"$tmp/crewload" -url "http://127.0.0.1:$http" -mode jobs -rate "$rate" -duration "$duration" -concurrency 64 \
  -job "{\"kind\":\"sleep\",\"duration\":\"$sleep\"}" -progress 0 >"$tmp/load.txt" 2>&1 &
load=$!
metric() { # the sum of a metric's samples whose labels match $2
  curl -s "http://127.0.0.1:$admin/metrics" | awk -v m="$1" -v l="$2" '$1 ~ "^"m && $1 ~ l {s += $2} END {printf "%d", s}'
}
printf '%-7s %10s %8s %9s %9s %10s\n' second accepted refused waiting rss_mib data_mib
start=$(date +%s)
while kill -0 "$load" 2>/dev/null; do
  sleep "$every" & wait $! || true
  kill -0 "$crewd" 2>/dev/null || { echo "crewd exited:"; tail -5 "$tmp/crewd.log"; exit 1; }
  rss=$(awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$crewd/status")
  data=$(du -sm "$tmp/data" | cut -f1)
  printf '%-7s %10s %8s %9s %9s %10s\n' "$(( $(date +%s) - start ))" \
    "$(metric crewd_http_requests_total 'code="202",method="POST",route="/v1/jobs"')" \
    "$(metric crewd_http_requests_total 'code="503"')" "$(metric natsjs_consumer_lag '')" "$rss" "$data"
done
wait "$load" || true
cat "$tmp/load.txt"
# Every accepted job ended: the runs that succeeded, counted by crewd (a
# record of a job that ended long ago has expired: that is the point).
accepted=$(metric crewd_http_requests_total 'code="202",method="POST",route="/v1/jobs"')
for _ in $(seq 600); do
  ended=$(metric crewd_job_run_seconds_count 'outcome="succeeded"')
  [ "$ended" -ge "$accepted" ] && break
  sleep 0.1
done
echo "soak: $accepted jobs accepted, $ended ended succeeded, $(metric crewd_http_requests_total 'code="503"') refused"
[ "$ended" -ge "$accepted" ] || { echo "soak: $((accepted - ended)) accepted jobs did not end" >&2; exit 1; }

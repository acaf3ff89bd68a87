#!/usr/bin/env bash
# The durable jobs' rate on the compose cluster (R3): the images built, the
# compose file up under a project of its own (three nats-servers, the jobs
# stream and bucket on all three, three crewd replicas of 16 workers, the
# trace collector), then crewload posts sleep jobs of 5-20 ms from 64
# clients to the three replicas in turn (as a Service spreads them) while
# all three run them, and waits for every one to end. It prints jobs/s accepted, jobs/s ended, the ideal (48
# workers / mean sleep), the share of it measured, the p50/p99 of
# POST /v1/jobs, and the replicated writes a job (messages the jobs' stream
# and the records' bucket stored, and the consumer's acks, read from nats1's
# monitor before and after each round), and where the cores went: each
# container's CPU time in the round, per job (from its cgroup, where the
# host shows it). The project is torn down ("down -v") at the end.
# Tracing stays as the compose file sets it (every request sampled);
# CREW_TRACE_RATIO=0.1 or CREW_OTLP_ENDPOINT= change that.
# -ref REV compares this tree's crewd with REV's, side by side: REV's
# image is built from a git worktree (with REV's own build script), and
# each round runs REV's, then this tree's, each on a fresh cluster after a
# warm-up of -warmup jobs (default 1000 with -ref or more than one
# -partitions, else 0), both loaded by this tree's crewload; every line of
# a round names its build. -partitions "1 3" likewise compares stores of
# one and three partitions (CREW_JOB_PARTITIONS; default 3, compose's),
# and adds how evenly the three nats-servers' CPU was spent (the busiest
# over the idlest). Each round also prints the store reads crewd made a
# job and the requests each cost (its hedging: crewd_job_store_read_tries_total
# over crewd_job_store_reads_total), and the pull requests a job
# (natsjs_pulls_total).
# -nats-cpus X limits each nats-server's container to X cores (docker
# update --cpus), as if each server had a machine of its own rather than a
# share of this one's: a store's one leader is then bounded by its
# server's cores, as it is in production.
# -nats-profile DIR has each nats-server serve Go's profiles (--profile,
# on the compose network only) and saves a CPU profile of each server over
# each round in DIR (nats1-r1-this-3p.pprof: go tool pprof -top FILE).
# Usage: deploy/compose/jobs-bench.sh [-requests 3000] [-rounds 3] [-warmup N] [-ref REV] [-partitions "1 3"] [-nats-cpus X] [-nats-profile DIR]
set -euo pipefail
cd "$(dirname "$0")"
requests=3000 rounds=3 warmup= ref= partitions=3 natscpus= profdir=
while [ $# -gt 0 ]; do
  case "$1" in
    -requests) requests=$2; shift 2 ;;
    -rounds) rounds=$2; shift 2 ;;
    -warmup) warmup=$2; shift 2 ;;
    -ref) ref=$2; shift 2 ;;
    -partitions) partitions=$2; shift 2 ;;
    -nats-cpus) natscpus=$2; shift 2 ;;
    -nats-profile) profdir=$2; shift 2 ;;
    *) echo "usage: $0 [-requests N] [-rounds N] [-warmup N] [-ref REV] [-partitions \"1 3\"] [-nats-cpus X] [-nats-profile DIR]" >&2; exit 2 ;;
  esac
done
read -r -a parts <<<"$partitions"
for n in "${parts[@]}"; do
  case "$n" in
    [1-9] | [1-9][0-9]) ;;
    *) echo "jobs-bench: -partitions \"$partitions\": want numbers of partitions from 1 to 99" >&2; exit 2 ;;
  esac
done
case "$natscpus" in
  '' | [0-9] | [0-9].[0-9] | [0-9].[0-9][0-9]) ;;
  *) echo "jobs-bench: -nats-cpus \"$natscpus\": want cores, such as 0.5" >&2; exit 2 ;;
esac
if [ -z "$warmup" ]; then
  if [ -n "$ref" ] || [ "${#parts[@]}" -gt 1 ]; then warmup=1000; else warmup=0; fi
fi
dc=(docker compose)
"${dc[@]}" version >/dev/null 2>&1 || dc=(docker-compose)
project=crewjobsbench$$
tmp=$(mktemp -d)
cleanup() {
  "${dc[@]}" -p "$project" down -v -t 5 >/dev/null 2>&1 || true
  if [ -n "$ref" ]; then git -C ../.. worktree remove --force "$tmp/ref" >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ -n "$profdir" ]; then
  mkdir -p "$profdir"
  profdir=$(cd "$profdir" && pwd)
  printf 'services:\n' >"$tmp/profile.yaml"
  for s in nats1 nats2 nats3; do
    printf '  %s:\n    command: ["--name", "%s", "--profile", "6060"]\n' "$s" "$s" >>"$tmp/profile.yaml"
  done
  dc+=(-f compose.yaml -f "$tmp/profile.yaml")
fi
./build-images.sh crewd:jobsbench crew-nats:jobsbench crew-otelcol:jobsbench >/dev/null
(cd ../../service && go build -o "$tmp/crewload" ./cmd/crewload)
# The builds to run, REV's first: labels and their crewd images.
labels=(this) images=(crewd:jobsbench)
if [ -n "$ref" ]; then
  if ! out=$(git -C ../.. worktree add --detach "$tmp/ref" "$ref" 2>&1); then
    echo "jobs-bench: cannot check out $ref: $out" >&2
    exit 2
  fi
  "$tmp/ref/service/scripts/build-image.sh" crewd:jobsbench-ref >/dev/null
  labels=("$ref" this) images=(crewd:jobsbench-ref crewd:jobsbench)
fi
export NATS_IMAGE=crew-nats:jobsbench OTELCOL_IMAGE=crew-otelcol:jobsbench
for v in CREWD1_PORT CREWD2_PORT CREWD3_PORT CREWD1_ADMIN_PORT CREWD2_ADMIN_PORT CREWD3_ADMIN_PORT \
  NATS1_CLIENT_PORT NATS2_CLIENT_PORT NATS3_CLIENT_PORT NATS1_MONITOR_PORT NATS2_MONITOR_PORT NATS3_MONITOR_PORT OTELCOL_PORT; do
  export "$v="
done
# up starts the cluster with crewd image $1 and $2 partitions and waits
# for the three replicas: url is the three's APIs (comma-separated, crewd1's
# first), monitor nats1's.
up() {
  export CREWD_IMAGE=$1 CREW_JOB_PARTITIONS=$2
  "${dc[@]}" -p "$project" up -d >/dev/null 2>&1
  if [ -n "$natscpus" ]; then
    for s in nats1 nats2 nats3; do
      docker update --cpus "$natscpus" "$("${dc[@]}" -p "$project" ps -q "$s")" >/dev/null
    done
  fi
  url= admins=()
  for s in crewd1 crewd2 crewd3; do
    for _ in $(seq 240); do
      a=$(docker port "$("${dc[@]}" -p "$project" ps -q "$s")" 8080/tcp 2>/dev/null | head -1) || true
      if [ -n "$a" ] && curl -fs "http://$a/readyz" >/dev/null 2>&1; then break; fi
      a=
      sleep 0.5
    done
    [ -n "$a" ] || { echo "jobs-bench: $s not ready" >&2; "${dc[@]}" -p "$project" logs --tail 20 >&2; exit 1; }
    url="${url:+$url,}http://$a"
    admins+=("$(docker port "$("${dc[@]}" -p "$project" ps -q "$s")" 9090/tcp | head -1)")
  done
  monitor=$(docker port "$("${dc[@]}" -p "$project" ps -q nats1)" 8222/tcp | head -1)
  monitors=()
  for s in nats1 nats2 nats3; do
    monitors+=("$(docker port "$("${dc[@]}" -p "$project" ps -q "$s")" 8222/tcp | head -1)")
  done
  if [ "$warmup" -gt 0 ]; then
    "$tmp/crewload" -token-file secrets/token -url "$url" -mode jobs -requests "$warmup" -concurrency 64 -sleep 5ms-20ms -wait -workers 48 -progress 0 >/dev/null
  fi
  placement=$(spread "$2")
}
# spread waits, with $1 partitions up to 60 s, until crewd's Balance has
# spread the leaders of the jobs' streams, buckets and lanes (consumers
# named crewd*) over the three servers, as a cluster up for a while has
# them (each server leading as many as another, give or take one); then
# it says where they are and which server each crewd is attached to (a
# server with two crewd carries two replicas' publishes, pulls, acks and
# reads: nats.go picks a server of the URLs at random).
spread() {
  python3 - "$1" "${monitors[@]}" <<'PY'
import json, sys, time, urllib.request
parts, monitors = int(sys.argv[1]), sys.argv[2:]
def get(m, path):
    with urllib.request.urlopen(f"http://{m}{path}") as r:
        return json.load(r)
start = time.time()
while True:
    led = {}
    for a in get(monitors[0], "/jsz?accounts=true&streams=true&consumers=true").get("account_details", []):
        for s in a.get("stream_detail", []):
            groups = [s] if s["name"].startswith(("jobs", "KV_jobs")) else []
            groups += [c for c in s.get("consumer_detail") or [] if c["name"].startswith("crewd")]
            for g in groups:
                l = (g.get("cluster") or {}).get("leader")
                led[l] = led.get(l, 0) + 1
    counts = [led.get(f"nats{i}", 0) for i in (1, 2, 3)]
    if parts == 1 or max(counts) - min(counts) <= 1 or time.time() - start > 60:
        break
    time.sleep(2)
attached = [sum(1 for c in get(m, "/connz?limit=1024").get("connections") or [] if c.get("name") == "crewd") for m in monitors]
print(f"leaders    nats1 {counts[0]}, nats2 {counts[1]}, nats3 {counts[2]} (streams, buckets, lanes; waited {time.time() - start:.0f} s); crewd attached: nats1 {attached[0]}, nats2 {attached[1]}, nats3 {attached[2]}")
PY
}
# The replicated writes a job, from nats1's monitor: the messages every
# partition's jobs stream and records' bucket stored and the acks their
# consumers took (their ack floors), before and after each round, divided
# by the jobs.
counters() {
  curl -fs "http://$monitor/jsz?accounts=true&streams=true&consumers=true" | python3 -c '
import json, re, sys
d = json.load(sys.stdin)
msgs = acks = 0
for a in d.get("account_details", []):
    for s in a.get("stream_detail", []):
        if re.fullmatch(r"(KV_)?jobs(-[0-9]+)?", s["name"]):
            msgs += s["state"]["last_seq"]
        for c in s.get("consumer_detail") or []:
            if c["name"] == "crewd":
                acks += c["ack_floor"]["consumer_seq"]
print(msgs, acks)'
}
# The messages crewd's connections have sent the servers so far
# (publishes, acks, pulls, API requests: /connz's in_msgs of every
# connection named crewd, on the three servers).
crewd_msgs() {
  python3 - "${monitors[@]}" <<'PY'
import json, sys, urllib.request
n = 0
for m in sys.argv[1:]:
    with urllib.request.urlopen(f"http://{m}/connz?limit=1024") as r:
        n += sum(c.get("in_msgs", 0) for c in json.load(r).get("connections") or [] if c.get("name") == "crewd")
print(n)
PY
}
# The store reads the three crewd have made so far and the requests they
# sent ("reads tries pulls": a hedged read sent again, or four times at
# once while a replica seems cut off, costs more than one), and their
# Sources' pull requests, from each replica's admin /metrics.
crewd_reads() {
  python3 - "${admins[@]}" <<'PY'
import sys, urllib.request
reads = tries = pulls = 0
for a in sys.argv[1:]:
    with urllib.request.urlopen(f"http://{a}/metrics") as r:
        for l in r.read().decode().splitlines():
            name, _, v = l.rpartition(" ")
            if name == "crewd_job_store_reads_total":
                reads += float(v)
            elif name == "crewd_job_store_read_tries_total":
                tries += float(v)
            elif name.startswith("natsjs_pulls_total{"):
                pulls += float(v)
print(int(reads), int(tries), int(pulls))
PY
}
# Each container's CPU time so far, in ns, from its cgroup (v1 or v2):
# "name ns" lines; none where the host does not show them.
cpu_times() {
  for s in nats1 nats2 nats3 crewd1 crewd2 crewd3 otelcol; do
    id=$(docker inspect -f '{{.Id}}' "$("${dc[@]}" -p "$project" ps -q "$s")" 2>/dev/null) || continue
    for f in "/sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage" "/sys/fs/cgroup/system.slice/docker-$id.scope/cpu.stat"; do
      [ -r "$f" ] || continue
      case "$f" in
        *cpu.stat) echo "$s $(($(awk '$1 == "usage_usec" {print $2}' "$f") * 1000))" ;;
        *) echo "$s $(cat "$f")" ;;
      esac
      break
    done
  done
}
# measure runs round $1 on the cluster up, its lines prefixed with $2.
measure() {
  round=$1 label=$2
  echo "== round $round${label:+ ($label)}: 3 crewd x 16 workers on an R3 JetStream cluster, $requests sleep jobs of 5-20 ms from 64 clients, posted to each crewd in turn"
  echo "${label:+$label: }$placement"
  read -r m0 a0 < <(counters)
  read -r q0 < <(crewd_msgs)
  read -r r0 t0 p0 < <(crewd_reads)
  cpu_times >"$tmp/cpu0"
  profiles=()
  if [ -n "$profdir" ]; then
    for s in nats1 nats2 nats3; do
      ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$("${dc[@]}" -p "$project" ps -q "$s")")
      f="$profdir/$s-r$round${label:+-$(echo "$label" | tr -c 'a-zA-Z0-9\n' '-')}.pprof"
      curl -fs -o "$f" "http://$ip:6060/debug/pprof/profile?seconds=5" &
      profiles+=($!)
    done
  fi
  "$tmp/crewload" -token-file secrets/token -url "$url" -mode jobs -requests "$requests" -concurrency 64 -sleep 5ms-20ms -wait -workers 48 -progress 0 |
    awk -v p="${label:+$label: }" '{print p $0}'
  sleep 1 # the last acks reach the monitor
  for pid in "${profiles[@]}"; do wait "$pid" || echo "jobs-bench: a profile was not taken" >&2; done
  read -r m1 a1 < <(counters)
  read -r q1 < <(crewd_msgs)
  read -r r1 t1 p1 < <(crewd_reads)
  cpu_times >"$tmp/cpu1"
  python3 -c "import sys; m, a, n = $((m1 - m0)), $((a1 - a0)), $requests; print(f'${label:+$label: }writes     {(m + a) / n:.2f} a job: {m} messages stored (jobs and records) and {a} acks for {n} jobs')"
  python3 -c "q, n = $((q1 - q0)), $requests; print(f'${label:+$label: }to nats    {q / n:.2f} messages a job from crewd (publishes, acks, pulls, API requests): {q}')"
  python3 -c "r, t, n = $((r1 - r0)), $((t1 - t0)), $requests; print(f'${label:+$label: }reads      {r / n:.2f} a job, {t / max(r, 1):.2f} requests a read (hedged): {r} reads, {t} requests')"
  python3 -c "p, n = $((p1 - p0)), $requests; print(f'${label:+$label: }pulls      {p / n:.2f} a job: {p} pull requests from crewd')"
  python3 - "$tmp/cpu0" "$tmp/cpu1" "$requests" "${label:+$label: }" <<'PY'
import sys
before = dict(l.split() for l in open(sys.argv[1]) if l.strip())
after = dict(l.split() for l in open(sys.argv[2]) if l.strip())
n = int(sys.argv[3])
parts = [(s, (int(after[s]) - int(before[s])) / 1e9) for s in after if s in before]
if parts:
    total = sum(c for _, c in parts)
    print(f"{sys.argv[4]}cpu        {total:.1f} s in all, {total / n * 1e3:.2f} ms a job: " + ", ".join(f"{s} {c:.1f} s" for s, c in parts))
    nats = [c for s, c in parts if s.startswith("nats")]
    if len(nats) == 3 and min(nats) > 0:
        print(f"{sys.argv[4]}nats cpu   the busiest server {max(nats) / min(nats):.2f}x the idlest")
PY
}
if [ -z "$ref" ] && [ "${#parts[@]}" -eq 1 ]; then
  up crewd:jobsbench "${parts[0]}"
  for round in $(seq "$rounds"); do measure "$round" ""; done
  exit 0
fi
for round in $(seq "$rounds"); do
  for i in "${!labels[@]}"; do
    for n in "${parts[@]}"; do
      up "${images[$i]}" "$n"
      label=${labels[$i]}
      [ "${#parts[@]}" -gt 1 ] && label="$label, $n partitions"
      measure "$round" "$label"
      "${dc[@]}" -p "$project" down -v -t 5 >/dev/null 2>&1
    done
  done
done

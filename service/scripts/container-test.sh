#!/usr/bin/env bash
# The container, built and run: builds the image with build-image.sh, runs
# it read-only with every capability dropped and the jobs' store on a named
# volume, checks /healthz, a batch, a job and /metrics, stops it with
# SIGTERM (docker stop) and checks the exit code and the summary line; then
# kills one with SIGKILL while a job runs and checks that the next container
# on the same volume runs that job to success. Fails, never skips, when a
# Docker engine answers; says so and exits 0 only when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "container-test: no Docker engine on this machine: not run"
  exit 0
fi
tag="$(scripts/build-image.sh crewd:test)"
name="crewd-test-$$"
volume="crewd-test-data-$$"
cleanup() {
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker volume rm -f "$volume" >/dev/null 2>&1 || true
}
trap cleanup EXIT
fail() { echo "container-test: $*" >&2; docker logs "$name" 2>&1 | tail -20 >&2 || true; exit 1; }

# The image runs as 65532, on scratch: no shell to fall back on.
user="$(docker image inspect -f '{{.Config.User}}' "$tag")"
[ "$user" = "65532:65532" ] || fail "image user is '$user', want 65532:65532"

run() {
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker run -d --name "$name" -p 127.0.0.1::8080 -p 127.0.0.1::9090 -v "$volume:/data" \
    -e CREW_SHUTDOWN_DELAY=1s -e CREW_SHUTDOWN_TIMEOUT=8s --read-only --cap-drop ALL "$tag" >/dev/null
  api="http://$(docker port "$name" 8080/tcp | head -1)"
  admin="http://$(docker port "$name" 9090/tcp | head -1)"
  for _ in $(seq 100); do
    curl -fsS "$api/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
}
job() { curl -fsS -X POST "$api/v1/jobs" -H 'Content-Type: application/json' -d "$1" | sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p'; }
state() { curl -fsS "$api/v1/jobs/$1" | sed -n 's/.*"state":"\([a-z_]*\)".*/\1/p'; }

run
curl -fsS "$api/healthz" | grep -q '"ok"' || fail "/healthz"
curl -fsS "$api/readyz" | grep -q '"ready"' || fail "/readyz"
sum="$(curl -fsS -X POST "$api/v1/factorial" -H 'Content-Type: application/json' -d '{"numbers":[1,2,3]}')"
[ "$sum" = '{"sum":9,"count":3}' ] || fail "factorial answered $sum"
id="$(job '{"kind":"sleep","duration":"300ms"}')"
[ -n "$id" ] || fail "no job id"
metrics="$(curl -fsS "$admin/metrics")" || fail "/metrics"
grep -q '^crew_workers{pool="crewd"}' <<<"$metrics" || fail "/metrics has no crew_workers"
grep -q '^natsjs_consumer_lag{consumer="crewd",stream="jobs"}' <<<"$metrics" || fail "/metrics has no natsjs_consumer_lag"

docker stop -t 15 "$name" >/dev/null
code="$(docker inspect -f '{{.State.ExitCode}}' "$name")"
[ "$code" = 0 ] || fail "exit code $code after SIGTERM"
summary="$(docker logs "$name" 2>/dev/null | grep '"msg":"crewd stopped"')" || fail "no summary line"
grep -q '"jobs_succeeded":1' <<<"$summary" || fail "the job did not finish before exit: $summary"

# SIGKILL while a job runs: the next container on the volume runs it again.
run
[ "$(state "$id")" = succeeded ] || fail "the first job's record did not outlive its container"
id="$(job '{"kind":"sleep","duration":"2s"}')"
for _ in $(seq 50); do [ "$(state "$id")" = running ] && break; sleep 0.1; done
[ "$(state "$id")" = running ] || fail "job $id not running"
docker kill "$name" >/dev/null
run
for _ in $(seq 100); do [ "$(state "$id")" = succeeded ] && break; sleep 0.1; done
record="$(curl -fsS "$api/v1/jobs/$id")"
grep -q '"state":"succeeded"' <<<"$record" || fail "the job running at the kill: $record"
# Its first run wrote nothing before its end (a job is three writes): the new
# container hands it back from the journal the killed one left in /data,
# counting the run the kill cut short, so its record says attempt 2.
# The logs read whole first: a grep -q that stops at its match would leave
# docker logs writing into a closed pipe, which pipefail counts a failure.
grep -q '"attempts":2' <<<"$record" || fail "the job running at the kill does not count its interrupted run: $record"
logs="$(docker logs "$name" 2>/dev/null)"
grep '"msg":"natsjs: deliveries held by a killed process, from its journal"' <<<"$logs" | grep -q '"handed_back":1' ||
  fail "the next container did not hand back the interrupted job from its journal at once"
docker stop -t 15 "$name" >/dev/null
echo "container-test: ok: image $tag, exit 0 after SIGTERM; $summary; after SIGKILL the job ran again: $record"

#!/usr/bin/env bash
# The container, built and run: builds the image with build-image.sh, runs
# it read-only with every capability dropped and the jobs' store on a named
# volume and an API token file made by the image itself (crewd token new)
# mounted read-only, checks that a call without the token is refused (and
# that the image refuses every interface without a token file), checks
# /healthz, a batch, a job and /metrics, stops it with
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
tmp="$(mktemp -d)"
trap 'cleanup; rm -rf "$tmp"' EXIT
fail() { echo "container-test: $*" >&2; docker logs "$name" 2>&1 | tail -20 >&2 || true; exit 1; }

# The image runs as 65532, on scratch: no shell to fall back on.
user="$(docker image inspect -f '{{.Config.User}}' "$tag")"
[ "$user" = "65532:65532" ] || fail "image user is '$user', want 65532:65532"

# Without a token file the image serves nothing past its own loopback, and
# refuses to serve every interface.
if out="$(docker run --rm -e CREW_HTTP_ADDR=:8080 --read-only --cap-drop ALL "$tag" 2>&1)"; then
  fail "the image served every interface without a token file"
fi
grep -q 'without -api-tokens' <<<"$out" || fail "the image refused every interface without saying why: $out"
# A token made by the image; the file of its hash is read by its user.
docker run --rm "$tag" token new -name container-test -scopes jobs:read,jobs:submit >"$tmp/new" 2>/dev/null || fail "crewd token new"
token="$(sed -n 1p "$tmp/new")"
sed -n 2p "$tmp/new" >"$tmp/tokens"
chmod 0644 "$tmp/tokens"
# curl reads the header from a file: a token on its command line would
# show in every process list.
printf 'Authorization: Bearer %s\n' "$token" >"$tmp/auth"

run() {
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker run -d --name "$name" -p 127.0.0.1::8080 -p 127.0.0.1::9090 -v "$volume:/data" \
    -v "$tmp/tokens:/etc/crewd/tokens:ro" -e CREW_API_TOKENS=/etc/crewd/tokens \
    -e CREW_SHUTDOWN_DELAY=1s -e CREW_SHUTDOWN_TIMEOUT=8s --read-only --cap-drop ALL "$tag" >/dev/null
  api="http://$(docker port "$name" 8080/tcp | head -1)"
  admin="http://$(docker port "$name" 9090/tcp | head -1)"
  for _ in $(seq 100); do
    curl -fsS "$api/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
}
call() { curl -fsS -H @"$tmp/auth" "$@"; }
job() { call -X POST "$api/v1/jobs" -H 'Content-Type: application/json' -d "$1" | sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p'; }
state() { call "$api/v1/jobs/$1" | sed -n 's/.*"state":"\([a-z_]*\)".*/\1/p'; }

run
curl -fsS "$api/healthz" | grep -q '"ok"' || fail "/healthz"
curl -fsS "$api/readyz" | grep -q '"ready"' || fail "/readyz"
code="$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$api/v1/jobs" -H 'Content-Type: application/json' -d '{"kind":"sleep","duration":"1ms"}')"
[ "$code" = 401 ] || fail "a job without a token answered $code, want 401"
sum="$(call -X POST "$api/v1/factorial" -H 'Content-Type: application/json' -d '{"numbers":[1,2,3]}')"
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
if docker logs "$name" 2>&1 | grep -qF "$token"; then fail "the log holds the token"; fi

# SIGKILL while a job runs: the next container on the volume runs it again.
run
[ "$(state "$id")" = succeeded ] || fail "the first job's record did not outlive its container"
id="$(job '{"kind":"sleep","duration":"2s"}')"
for _ in $(seq 50); do [ "$(state "$id")" = running ] && break; sleep 0.1; done
[ "$(state "$id")" = running ] || fail "job $id not running"
docker kill "$name" >/dev/null
run
for _ in $(seq 100); do [ "$(state "$id")" = succeeded ] && break; sleep 0.1; done
record="$(call "$api/v1/jobs/$id")"
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

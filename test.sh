#!/usr/bin/env bash
# The full test run, what CI runs: .ci/install (what is missing), gofmt, go vet and
# go test -race in every module, then the core's warm-burst liveness stress
# without the race detector (millions of bursts at GOMAXPROCS 2, 4 and 8, in
# 90 s; the long form is in the README), a stop racing Pause and Resume in
# every mode (plain under -race, and widened), a 30 s fuzz run of the core, a quick
# run of the benchmark suite (that its scenarios still run and draw), a
# quick run of the job systems' benchmark (asynq on Redis, River on
# PostgreSQL, crewd: 2,000 jobs each, under a minute),
# crewd's container built, run and stopped, and the scale-out proof (three
# crewd replicas on a three-node JetStream cluster in containers, three
# partitions, through each NATS server cut off or killed in turn, a crewd
# killed, a scale-down and a rolling restart, every accepted job done, the
# healthy replicas' reads and writes within a second, a 1,000-step
# fan-out/fan-in workflow run through the faults, its join once; about 5
# minutes), both where a Docker engine answers, and deploy/check.sh (Helm,
# kustomize, kube-score, promtool, and every object applied to a real
# kube-apiserver with --dry-run=server; its tools are built once and
# cached: about 10 minutes the first time), and the chart on a real
# one-node Kubernetes (deploy/node/node-test.sh: the node built from
# source, helm install, a job through the Service, pod delete, rollout,
# scale, drain through the PDB and the pod of the NATS server leading the
# most partitions deleted under a steady load (reads and writes of the
# other pods within a second), helm test, and the kustomize prod overlay likewise; about 8 minutes
# warm, 9 more the first time; skipped with its reason where the machine
# cannot run the node). The whole run: about 57 minutes on an empty machine
# (an estimate: the last cold run plus kube-router's build and the node's
# policy checks); 24.7 minutes (1,484 s) on a clean clone with the tools'
# cache filled (2026-11-28)
# (deploy/README.md, "On a real node").
# Usage: ./test.sh            (everything)
#        ./test.sh prom bench (some modules, by directory; nothing else)
# The core alone, fast on a cold cache: go test -race .
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -eq 0 ]; then
  .ci/install # what the tests need and the machine lacks; a no-op when all is there
fi
if [ $# -gt 0 ]; then
  mods=("$@")
else
  mapfile -t mods < <(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -printf '%h\n' | sort)
fi
for dir in "${mods[@]}"; do
  echo "== $dir"
  unformatted=$(cd "$dir" && gofmt -l .)
  if [ -n "$unformatted" ]; then
    echo "gofmt would change these files in $dir:" >&2
    echo "$unformatted" >&2
    exit 1
  fi
  (cd "$dir" && go vet ./... && go test -race -count=1 -timeout 20m ./...)
done
if [ $# -eq 0 ]; then
  echo "== liveness: warm bursts under real threads, 20s plain and 10s with widened windows, at GOMAXPROCS 2, 4 and 8"
  go test -count=1 -run '^TestWarmBursts$' -bursts 20s -v . | grep -E 'bursts in|stranded|started after|^(ok|FAIL|---)'
  go test -count=1 -tags crewyield -run '^TestWarmBursts$' -bursts 10s -v . | grep -E 'bursts in|stranded|started after|^(ok|FAIL|---)'
  echo "== safety: a stop racing Pause and Resume loses no task, 2s a mode plain and 2s widened, at GOMAXPROCS 2, 4 and 8"
  go test -count=1 -race -run '^TestStopDuringPauseStorm$' -storm 2s -v . | grep -E 'stops|lost|^(ok|FAIL|---)'
  go test -count=1 -tags crewyield -run '^TestStopDuringPauseStorm$' -storm 2s -v . | grep -E 'stops|lost|^(ok|FAIL|---)'
  echo "== fuzz: FuzzPoolOperations, 30s"
  go test -run '^$' -fuzz '^FuzzPoolOperations$' -fuzztime 30s .
  echo "== bench: crewbench -quick"
  (cd bench && go run ./cmd/crewbench -quick -out "$(mktemp -d)")
  echo "== bench/jobs: jobsbench -quick"
  (cd bench/jobs && go run ./cmd/jobsbench -quick)
  echo "== service: the container"
  service/scripts/container-test.sh
  echo "== deploy: scale-out in containers through kills, a cut, a scale-down and a rolling restart"
  deploy/compose/cluster-test.sh
  echo "== deploy: the Kubernetes files, against a real kube-apiserver"
  deploy/check.sh
  echo "== deploy: the chart on a real one-node Kubernetes, through faults under load"
  deploy/node/node-test.sh
fi

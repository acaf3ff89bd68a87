#!/usr/bin/env bash
# The scale-out proof (clustertest/): builds the images, brings the compose
# file up under a project of its own, drives background jobs over the
# three crewd replicas while one crewd is killed and one nats-server is cut
# off its network, restores both, checks that every job answered 202
# succeeded, and tears everything down ("down -v"), on a failure too.
# Fails, never skips, when a Docker engine answers; says so and exits 0
# only when there is none. Knobs: CLUSTER_JOBS (1000), CLUSTER_RATE (50
# jobs/s), CLUSTER_SETTLE (2m).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "cluster-test: no Docker engine on this machine: not run"
  exit 0
fi
cd clustertest
CREW_CLUSTER_TEST=1 go test -race -count=1 -timeout 15m -v -run '^TestCluster$' .

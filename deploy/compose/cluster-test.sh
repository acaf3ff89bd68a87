#!/usr/bin/env bash
# The scale-out proof (clustertest/): builds the images, brings the compose
# file up under a project of its own, drives background jobs over the
# three crewd replicas (three partitions, CREW_JOB_PARTITIONS) through
# each NATS server hit in turn while it leads some partitions (one cut
# off its network, a second cut off with a crewd killed, the third
# killed), a scale-down to one crewd and back, and a rolling restart;
# checks that every job answered 202 succeeded and that replicas on
# healthy servers neither stalled a read nor took to accept a job more
# than a second, nor refused one, and tears everything down ("down -v"),
# on a failure too. Then the trace
# proof (TestTrace): a job posted to crewd1, interrupted there by a stop and
# run again on crewd2, found in the trace backend (the collector's file) as
# one trace across both replicas, the second run linked to the first.
# About three minutes plus the images' build. Fails, never skips, when a Docker engine answers;
# says so and exits 0 only when there is none. Knobs: CLUSTER_RATE (50
# jobs/s), CLUSTER_SETTLE (2m).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "cluster-test: no Docker engine on this machine: not run"
  exit 0
fi
cd clustertest
CREW_CLUSTER_TEST=1 go test -race -count=1 -timeout 15m -v -run '^(TestCluster|TestTrace)$' .

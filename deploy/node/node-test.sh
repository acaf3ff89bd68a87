#!/usr/bin/env bash
# The chart and the kustomize prod overlay on a real node: brings
# node.sh's one-node cluster up, runs TestNode (node_test.go: helm install,
# every pod Ready, the stream at R3, a job through the Service, then faults
# under a steady load) and TestNodeKustomize (the same on overlays/prod,
# with fewer faults) in the node's network namespace, and tears the node
# down, on a failure too (KEEP_NODE=1 leaves it up to look at). With
# NODE_HPA=1 also TestNodeHPA (the chart's HPA on CPU moving the
# Deployment up and down under load, through metrics-server; 2.5 minutes
# more, which would take a warm run past 10 minutes, so not by default),
# and with NODE_BACKLOG=1 TestNodeBacklog (the chart's HPA on crewd's
# backlog, the External metric from ./extmetrics and the node's
# Prometheus; 3.5 minutes more, not by default for the same reason).
# TestNode and TestNodeKustomize also try, from a pod without crewd's
# labels and from a crewd pod, what the NetworkPolicies must refuse and
# allow (netpol_test.go); node.sh runs kube-router's firewall to enforce
# them (NODE_NETPOL=off: no enforcer, and those checks fail).
# TestNodeNetworkPolicy is that check alone on an install of its own
# (NODE_RUN='^TestNodeNetworkPolicy$'; not by default, the other two make it).
# NODE_RUN: the tests to run (go test -run), e.g. '^TestNodeBacklog$'.
# Where the machine cannot run the node (not root, no Docker engine, no
# network namespaces...) it says why and exits 0: not run.
# About 8 minutes on a warm cache (11.6 with NODE_BACKLOG=1); the first run builds the node's
# binaries first, about 9 minutes more (deploy/README.md).
set -euo pipefail
cd "$(dirname "$0")"
if ! why=$(./node.sh check); then
  echo "node-test: this machine cannot run the node ($(tr '\n' ';' <<<"$why" | sed 's/;$//')): not run"
  exit 0
fi
# One node per machine (its paths and the kubelet's cgroups are fixed): a
# node already up is another run's, or left by one, and is not touched.
if ./node.sh exists; then
  echo "node-test: a node is already up on this machine (another run's, or left behind: deploy/node/node.sh status; deploy/node/node.sh down)" >&2
  exit 1
fi
t0=$SECONDS
tmp=$(mktemp -d)
started=0
cleanup() {
  local rc=$?
  if [ $started = 1 ] && [ "${KEEP_NODE:-0}" = 1 ]; then
    echo "node-test: the node is left up (KEEP_NODE=1): deploy/node/node.sh exec kubectl get pods -A; deploy/node/node.sh down" >&2
  elif [ $started = 1 ]; then
    ./node.sh down || rc=1
  fi
  rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Built outside the node's namespace (which has no route to the module
# proxy), run inside it.
go test -race -c -o "$tmp/node.test" .
started=1 # from here on the node is this run's, to tear down, even half up
./node.sh up
echo "node-test: node up after $((SECONDS - t0))s"
CREW_NODE_TEST=1 ./node.sh exec "$tmp/node.test" -test.v -test.count=1 -test.timeout 30m -test.run "${NODE_RUN:-^TestNode(Kustomize|HPA|Backlog)?\$}"
echo "node-test: passed in $((SECONDS - t0))s"

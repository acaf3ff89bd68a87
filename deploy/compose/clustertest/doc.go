// Package clustertest proves crewd's scale-out in containers: the compose
// file next to it (three nats-servers as one JetStream cluster, three crewd
// replicas) is brought up, a few hundred background jobs are submitted over
// the three replicas, one crewd is killed (SIGKILL) and one nats-server is
// cut off its network mid-load, both are restored, and every job that was
// answered 202 must reach "succeeded".
//
// The test needs a Docker engine with compose and a few minutes, so it runs
// only when CREW_CLUSTER_TEST=1 (deploy/compose/cluster-test.sh sets it);
// otherwise it skips. The package has no code of its own, only the test.
package clustertest

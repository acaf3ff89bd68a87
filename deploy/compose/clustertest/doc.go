// Package clustertest proves crewd's scale-out in containers. TestCluster
// brings up the compose file next to it (three nats-servers as one
// JetStream cluster with crewd's stream and bucket on all three, three
// crewd replicas), submits a thousand background jobs over the replicas,
// kills one crewd (SIGKILL) while it runs jobs and cuts the jobs stream's
// leader off its network mid-load, restores both, and requires every job
// answered 202 to reach "succeeded", read from any replica.
//
// The test needs a Docker engine with compose and a minute or two, so it
// runs only with CREW_CLUSTER_TEST=1 (deploy/compose/cluster-test.sh sets
// it); otherwise it skips. The package has no code of its own.
package clustertest

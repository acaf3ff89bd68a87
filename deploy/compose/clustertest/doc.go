// Package clustertest proves crewd's scale-out in containers. TestCluster
// brings up the compose file next to it (three nats-servers as one
// JetStream cluster with crewd's three partitions, each a stream and a
// bucket on all three servers, three crewd replicas) and, under a steady
// load of background jobs spread over the replicas, brings every fault
// Kubernetes and a network bring, one after the other, each NATS server
// hit in turn while it leads some partitions: one cut off the network, a
// crewd killed (SIGKILL) while it runs jobs with a second cut off, the
// third killed (docker kill), crewd scaled 3 -> 1 -> 3 with SIGTERM, and
// a rolling restart of every crewd. It requires every job answered 202 to
// reach "succeeded", read from any replica, and the replicas attached to
// healthy servers, through each NATS fault, to answer a read at least
// every second and to accept every job within a second; it prints
// accepted, succeeded, jobs run twice, the longest stall and the slowest
// write.
//
// TestTrace brings up the trace backend (an OpenTelemetry Collector writing
// spans to a file), crewd1 and the nats-servers; posts a job to crewd1 in a
// trace of its own, starts crewd2, stops crewd1 while the job runs, and
// requires the collector's file to hold the job's whole trace: crewd1's
// server span under the client's, the record write and the publish under
// it, the interrupted run on crewd1 and the run on crewd2 under the
// publish, with the job's id, attempt and outcome, the second run linked
// to the first.
//
// The tests need a Docker engine with compose and about two minutes (plus
// the images' build), so they run only with CREW_CLUSTER_TEST=1
// (deploy/compose/cluster-test.sh sets it); otherwise they skip. The package
// has no code of its own.
package clustertest

// Command natsreplicas raises streams that exist, or are about to, to a
// number of replicas, and waits until every replica is current. The
// compose file runs it once beside crewd: crewd creates its jobs stream
// and its records' key-value bucket (KV_jobs) with one replica, and uses
// streams that exist as they are; this makes both R3 on the three-node
// cluster. Consumers that inherit their stream's replicas (crewd's does)
// follow the stream.
//
//	natsreplicas -servers nats://nats1:4222,nats://nats2:4222 -streams jobs,KV_jobs -replicas 3 -wait 2m
//
// It waits for each stream to appear (crewd creates them when it starts),
// never lowers a stream's replicas, and exits 0 once every stream has its
// replicas all current; 1 when -wait ends first, saying which stream is
// short of what; 2 for bad flags.
package main

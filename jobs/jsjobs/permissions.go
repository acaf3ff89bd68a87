package jsjobs

// Permissions are the NATS subjects a Runner publishes and subscribes to,
// for a NATS user that runs crew's jobs and may do nothing else (a
// server's authorization block grants them): its stream's and its
// bucket's subjects and the JetStream API calls on those two streams that
// it makes (their info, creation and update, messages read, deleted and
// purged by subject, any call on their consumers, which the runner makes,
// reads, pauses, pulls from, and deletes when an ordered one is replaced,
// acks), the cancels, and replies on its inboxes. Not another stream's,
// not a stream's deletion, not the server's or the system account's.
type Permissions struct {
	Publish, Subscribe []string
}

// PermissionsFor are the permissions of the Runners of stream and bucket
// (Config.Stream and Config.Bucket) under the JetStream API's default
// prefix ($JS.API, no domain).
func PermissionsFor(stream, bucket string) Permissions {
	l := layout{stream: stream, bucket: bucket}
	kv := "KV_" + bucket
	pub := []string{
		l.jobs(),             // jobs, ticks, queues' jobs
		stream + "-at.>",     // jobs due later, periodic schedules
		stream + "-cancel.>", // cancels
		l.record(">"),        // records, idempotency keys, progress
		"$JS.API.INFO",       // the account's JetStream
	}
	for _, s := range []string{stream, kv} {
		pub = append(pub,
			"$JS.API.STREAM.INFO."+s, "$JS.API.STREAM.CREATE."+s, "$JS.API.STREAM.UPDATE."+s,
			"$JS.API.STREAM.MSG.GET."+s, "$JS.API.STREAM.MSG.DELETE."+s, "$JS.API.STREAM.PURGE."+s,
			"$JS.API.DIRECT.GET."+s, "$JS.API.DIRECT.GET."+s+".>",
			"$JS.API.CONSUMER.*."+s, "$JS.API.CONSUMER.*."+s+".>", "$JS.API.CONSUMER.*.*."+s+".>",
			"$JS.ACK."+s+".>", "$JS.FC."+s+".>")
	}
	return Permissions{Publish: pub, Subscribe: []string{"_INBOX.>", stream + "-cancel.>"}}
}

// PartitionedPermissionsFor are the permissions of the Runners of a
// Partitioned store of n partitions on stream and bucket (NewPartitioned):
// each partition's PermissionsFor, and with more than one partition each
// stream's leader stepdown (Partitioned.Balance).
func PartitionedPermissionsFor(stream, bucket string, n int) Permissions {
	var p Permissions
	seen := map[*[]string]map[string]bool{&p.Publish: {}, &p.Subscribe: {}}
	add := func(list *[]string, subjects ...string) {
		for _, s := range subjects {
			if !seen[list][s] {
				seen[list][s] = true
				*list = append(*list, s)
			}
		}
	}
	for k := range max(n, 1) {
		s, b := partitionNames(stream, bucket, k)
		one := PermissionsFor(s, b)
		add(&p.Publish, one.Publish...)
		if n > 1 {
			add(&p.Publish, "$JS.API.STREAM.LEADER.STEPDOWN."+s, "$JS.API.STREAM.LEADER.STEPDOWN.KV_"+b)
		}
		add(&p.Subscribe, one.Subscribe...)
	}
	return p
}

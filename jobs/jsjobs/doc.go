// Package jsjobs is the durable job store, on NATS JetStream: a job is a
// message in a stream, its record a key in a key-value bucket, and a
// natsjs.Source runs the jobs on a crew pool through Runner.Handle, at
// least once, on whichever process pulls them. Jobs wait in named queues,
// each with its priorities (1 first), its limit of jobs running and its
// rate of jobs started across every process, and its pause. New finds or creates the
// stream, the consumer and the bucket; the Runner accepts jobs (Submit,
// SubmitOnce with an idempotency key), answers for their records (Get),
// counts attempts, holds a job's lease while it runs, never counts an
// outage of the store as a job's failure (StoreDown says when the store
// is out), links each run's span to the job's previous run, and exports
// its metrics (Collector) under the program's name (Config.Namespace).
//
// The package is built in floors, each file using only those below it:
//
//   - where things are and what fails: layout.go (every subject, stream
//     name and header), errors.go, size.go (the store's message limit),
//     leader.go (reads from a stream's leader), setup.go, index.go;
//   - the parts, each one concern: records.go (the bucket), stream.go (the
//     jobs' messages), find.go (where a job is, reading both), health.go
//     (the store's availability), instruments.go (metrics, spans, counts),
//     running.go (the runs here, for cancels), late.go (ends written after
//     a lost lease), tail.go (the index's feed), run.go (one run),
//     queuegauges.go (the queues as the metrics last read them, below
//     instruments.go);
//   - runner.go: the Runner over those parts, and its Config;
//   - its methods, short orchestration over the parts: availability.go,
//     submit.go, get.go, keyed.go, cancel.go, deadletter.go, list.go,
//     lanes.go (a queue's priorities, a consumer each), queues.go,
//     rate.go (a queue's starts a period), periodic.go, collector.go; a
//     delivery read as a pipeline
//     of steps, each with its own result: delivery.go (decode), mark.go
//     (the record marked running), run.go (the run), end.go and keep.go
//     (its end recorded), with handle.go on top;
//   - new.go (New, Close) and source.go (Source, QueueSource) at the top.
package jsjobs

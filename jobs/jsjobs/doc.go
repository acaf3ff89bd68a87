// Package jsjobs is the durable job store, on NATS JetStream: a job is a
// message in a stream, its record a key in a key-value bucket, and a
// natsjs.Source runs the jobs on a crew pool through Runner.Handle, at
// least once, on whichever process pulls them. New finds or creates the
// stream, the consumer and the bucket; the Runner accepts jobs (Submit,
// SubmitOnce with an idempotency key), answers for their records (Get),
// counts attempts, holds a job's lease while it runs, never counts an
// outage of the store as a job's failure (Ready and StoreDown say when
// the store is out), links each run's span to the job's previous run, and
// exports its metrics (Collector).
package jsjobs

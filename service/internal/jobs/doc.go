// Package jobs is the domain of crewd's background mode: a job is a long
// task with a timeout, accepted with an id (202) and looked up by it. It
// holds what every store shares: the Spec a client posts and its
// validation, the Record a client reads, the job's States, the ids, the
// idempotency keys, the errors the API maps to statuses, and the Runner
// interfaces the HTTP API needs. Two stores implement them, each in its own
// package: jsstore, the default (the job in a JetStream stream, its record
// in a key-value bucket, run through a natsjs.Source: durable,
// at-least-once, shared by every crewd on the stream, with all of its NATS
// setup), and memstore (the job on the pool, its record in memory, lost
// with the process). jobstest holds the tests both must pass.
package jobs

// Package jobs is crewd's background mode: a job is a long task with a
// timeout, accepted with an id (202) and looked up by it. The Runner
// interface is what the HTTP API needs; two implement it. JetStreamRunner,
// the default, keeps the job in a JetStream stream and its record in a
// key-value bucket, and runs it through a natsjs.Source calling Handle:
// durable, at-least-once, shared by every crewd on the stream. PoolRunner
// runs it on the pool with its record in a Store in memory, lost with the
// process.
package jobs

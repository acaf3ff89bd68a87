// Package memjobs is the in-memory job store: a Runner that runs each job
// as a long task on a crew pool, with its record in a Store bounded by
// count and age. Nothing survives the process; a full queue or a full
// store refuses a job rather than lose it. It passes the same tests as
// jsjobs, for a program's tests and for one process that may lose its jobs
// (crewd with -nats-url=off). A job runs once there: a failure is final
// (the JetStream store retries with backoff) until Retry runs it again,
// a jobs.Snooze ends it failed too, and a job due later, or of a kind
// only declared (jobs.Declare: nothing here runs it), is refused.
// Its jobs list newest first by their latest submission (jobs.Lister),
// not by their latest change of state as the JetStream store's do.
package memjobs

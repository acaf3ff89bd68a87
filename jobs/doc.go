// Package jobs is durable background jobs on a crew pool: a Go program
// registers its kinds of job, each with typed arguments and result and the
// function that runs it, and submits jobs that run at least once, with
// their records read back by id.
//
// A kind is a type that implements Args, registered once:
//
//	type Resize struct{ URL string `json:"url"`; Width int `json:"width"` }
//	func (Resize) Kind() string { return "resize" }
//
//	var kinds jobs.Kinds
//	jobs.Register(&kinds, func(ctx context.Context, a Resize) (Thumb, error) { … })
//
// A program that only submits declares its kinds by their arguments
// alone, jobs.Declare[Resize](&kinds): its jobs are checked as a
// registered kind's, and run by the workers that register the kind.
//
// A run reports how far it is with Progress(ctx, fraction, note); the
// store keeps the latest report, at most once a second, in the job's
// Record.Progress while it runs (ProgressWriter).
//
// This package holds what every store shares: Kinds, Register and Declare,
// the Spec a job is submitted and travels as, the Record a client reads,
// the job's States, its ids, idempotency keys, the errors a caller tells
// apart, and the Runner interfaces. Two stores implement them, each in its
// own package: jsjobs (module github.com/crew-go/crew/jobs/jsjobs, so that
// this module needs only the crew core), the durable one (a job is a
// message in a JetStream stream, its record a key in a key-value bucket,
// run through a
// natsjs.Source on whichever process pulls it: at-least-once, attempts,
// leases, idempotency keys, outages of the store that never count as a job's
// failure, traces and metrics), and memjobs (the job on the pool, its record
// in memory, lost with the process: for tests and for one process that may
// lose its jobs).
package jobs

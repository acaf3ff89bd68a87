package jsjobs

import (
	"strings"

	"github.com/crew-go/crew/jobs"
)

// layout is where a store's jobs, schedules, cancels and records live in
// NATS: every subject, stream name and header the Runner reads or writes
// is spelled here, and nowhere else.
//
//	<stream>.<id>             a job waiting in the default queue; the consumer
//	                          reads <stream>.* and <stream>.every.*
//	<stream>.every.<name>     a periodic job's tick (periodic.go)
//	<stream>.q.<queue>.<id>   a job waiting in a named queue; that queue's
//	                          consumer, <consumer>-q-<queue>, reads <stream>.q.<queue>.*
//	<stream>-at.<id>          a job due later, which the server publishes
//	                          to <stream>.<id> at its time; no consumer reads it
//	<stream>-at.every.<name>  a periodic job's schedule
//	<stream>-cancel.<id>      a cancel, told to every runner (core NATS: not stored)
//	$KV.<bucket>.<id>         a job's record, in the stream KV_<bucket>
//	$KV.<bucket>.idempotency.<hash>  an idempotency key's claim (keyed.go)
//
// Job ids are 16 hex digits, so never "every" and never with a dot: a
// subject says what it is by its tokens alone.
type layout struct{ stream, bucket string }

// everyToken is the subject token of periodic jobs' schedules and ticks.
const everyToken = "every."

// The headers of the jobs' messages. Crew-* are the Runner's own; Nats-*
// the server's message schedules.
const (
	// headerRetryOf marks the message of a Retry: the revision of the
	// ended record it runs again.
	headerRetryOf = "Crew-Retry-Of"
	// headerRetries is, on a Retry's message, the record's Retries once
	// that Retry is recorded: a message of an earlier run of the job
	// (handed back with a backoff, or not deleted by a cancel) is told
	// from the current one by it, and acked unrun.
	headerRetries = "Crew-Retries"
	// headerCreated is, on a job due later, when it was accepted: the
	// message the server publishes at its time is stamped with that time.
	headerCreated = "Crew-Created"
	// headerPeriodic is, on a tick's job, its periodic's name.
	headerPeriodic = "Crew-Periodic"
	// headerSubmitter is who submitted the job (Spec.Submitter), on its
	// message, a periodic job's schedule and its ticks' jobs: beside the
	// spec, not in it, so a worker of a version without it runs the job.
	headerSubmitter = "Crew-Submitter"

	headerSchedule       = "Nats-Schedule"           // when: "@at <time>", "@every 1m" or a cron expression
	headerScheduleTarget = "Nats-Schedule-Target"    // the subject the server publishes to
	headerScheduleZone   = "Nats-Schedule-Time-Zone" // a cron expression's
	headerScheduleNext   = "Nats-Schedule-Next"      // a tick's: when the next is due
)

func (l layout) job(id string) string      { return l.stream + "." + id }
func (l layout) jobs() string              { return l.stream + ".>" }
func (l layout) defaults() []string        { return []string{l.stream + ".*", l.tick("*")} }
func (l layout) queued(id string) string   { return l.stream + ".q.*." + id }
func (l layout) queueJobs(q string) string { return l.stream + ".q." + q + ".*" }

// in is the subject of job id waiting in queue q.
func (l layout) in(q, id string) string {
	if q == "" || q == jobs.DefaultQueue {
		return l.job(id)
	}
	return l.stream + ".q." + q + "." + id
}

// queueOf is the queue of a job's subject.
func (l layout) queueOf(subject string) string {
	if rest, ok := strings.CutPrefix(subject, l.stream+".q."); ok {
		if q, _, ok := strings.Cut(rest, "."); ok {
			return q
		}
	}
	return jobs.DefaultQueue
}

// consumer is the name of queue q's consumer, def the default queue's.
func consumerOf(def, q string) string {
	if q == "" || q == jobs.DefaultQueue {
		return def
	}
	return def + "-q-" + q
}
func (l layout) due(id string) string        { return l.stream + "-at." + id }
func (l layout) dues() string                { return l.stream + "-at.>" }
func (l layout) tick(name string) string     { return l.stream + "." + everyToken + name }
func (l layout) schedule(name string) string { return l.stream + "-at." + everyToken + name }
func (l layout) schedules() string           { return l.schedule("") }
func (l layout) cancel(id string) string     { return l.stream + "-cancel." + id }
func (l layout) cancels() string             { return l.stream + "-cancel.*" }
func (l layout) record(key string) string    { return "$KV." + l.bucket + "." + key }
func (l layout) bucketStream() string        { return "KV_" + l.bucket }

// subjectOf is what a message of the jobs' stream is, by its subject.
type subjectOf int

const (
	notOurs   subjectOf = iota
	aJob                // <stream>.<id>
	aTick               // <stream>.every.<name>
	aDue                // <stream>-at.<id>
	aSchedule           // <stream>-at.every.<name>
)

// parse says what a subject of the jobs' stream is, and its id or name
// (not checked: a made-up subject may carry anything).
func (l layout) parse(subject string) (subjectOf, string) {
	if rest, ok := strings.CutPrefix(subject, l.stream+"."); ok {
		if name, ok := strings.CutPrefix(rest, everyToken); ok {
			return aTick, name
		}
		if rest, ok := strings.CutPrefix(rest, "q."); ok {
			_, id, _ := strings.Cut(rest, ".")
			return aJob, id
		}
		return aJob, rest
	}
	if rest, ok := strings.CutPrefix(subject, l.stream+"-at."); ok {
		if name, ok := strings.CutPrefix(rest, everyToken); ok {
			return aSchedule, name
		}
		return aDue, rest
	}
	return notOurs, ""
}

// recordKey is the key of a record's subject.
func (l layout) recordKey(subject string) string {
	return strings.TrimPrefix(subject, l.record(""))
}

// queueName is a record's Queue: "" for the default queue, which older
// records and most jobs are in.
func queueName(q string) string {
	if q == jobs.DefaultQueue {
		return ""
	}
	return q
}

package jsjobs

import (
	"strconv"
	"strings"

	"github.com/crew-go/crew/jobs"
)

// layout is where a store's jobs, schedules, cancels and records live in
// NATS: every subject, stream name and header the Runner reads or writes
// is spelled here, and nowhere else.
//
//	<stream>.<id>             a job waiting in the default queue at the default
//	                          priority; the consumer reads <stream>.* and <stream>.every.*
//	<stream>.every.<name>     a periodic job's tick (periodic.go)
//	<stream>.q.<queue>.<id>   a job waiting in a named queue; that queue's
//	                          consumer, <consumer>-q-<queue>, reads <stream>.q.<queue>.*
//	<stream>[.q.<queue>].p<N>.<id>  a job of priority N (1, 3 or 4) waiting; its
//	                          lane's consumer, <consumer>-p<N>[-q-<queue>], reads
//	                          <stream>[.q.<queue>].p<N>.* (lanes.go)
//	<stream>-at.<id>          a job due later, which the server publishes
//	                          to <stream>.<id> at its time; no consumer reads it
//	<stream>-at.every.<name>  a periodic job's schedule
//	<stream>-cancel.<id>      a cancel, told to every runner (core NATS: not stored)
//	$KV.<bucket>.<id>         a job's record, in the stream KV_<bucket>
//	$KV.<bucket>.idempotency.<hash>  an idempotency key's claim (keyed.go)
//	$KV.<bucket>.progress.<id>  a running job's progress (progress.go)
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

func (l layout) job(id string) string { return l.stream + "." + id }
func (l layout) jobs() string         { return l.stream + ".>" }
func (l layout) defaults() []string   { return []string{l.stream + ".*", l.tick("*")} }

// waitingAt are the subjects job id may wait under, the most common
// first: the default queue, a named one, a priority of either.
func (l layout) waitingAt(id string) []string {
	return []string{l.job(id), l.stream + ".q.*." + id, l.stream + ".*." + id, l.stream + ".q.*.*." + id}
}

// lane is where queue q's jobs of priority p wait, before their ids.
func (l layout) lane(q string, p int) string {
	s := l.stream
	if q != "" && q != jobs.DefaultQueue {
		s += ".q." + q
	}
	if p != 0 && p != jobs.DefaultPriority {
		s += ".p" + strconv.Itoa(p)
	}
	return s
}

// laneJobs are queue q's jobs of priority p (the default queue's ticks
// aside).
func (l layout) laneJobs(q string, p int) string { return l.lane(q, p) + ".*" }

// in is the subject of job id waiting in queue q at priority p.
func (l layout) in(q string, p int, id string) string { return l.lane(q, p) + "." + id }

// queueOf is the queue of a job's subject.
func (l layout) queueOf(subject string) string {
	if rest, ok := strings.CutPrefix(subject, l.stream+".q."); ok {
		if q, _, ok := strings.Cut(rest, "."); ok {
			return q
		}
	}
	return jobs.DefaultQueue
}

// priorityOf is the priority of a job's subject.
func (l layout) priorityOf(subject string) int {
	if i := strings.LastIndexByte(subject, '.'); i >= 3 && subject[i-3] == '.' && subject[i-2] == 'p' {
		if p := int(subject[i-1] - '0'); p >= 1 && p <= jobs.MaxPriority {
			return p
		}
	}
	return jobs.DefaultPriority
}

// consumerOf is the name of the consumer of queue q's jobs of priority
// p, def the default queue's at the default priority.
func consumerOf(def, q string, p int) string {
	name := def
	if p != 0 && p != jobs.DefaultPriority {
		name += "-p" + strconv.Itoa(p)
	}
	if q == "" || q == jobs.DefaultQueue {
		return name
	}
	return name + "-q-" + q
}

// laneOf is the queue and priority of consumer name, def the default
// queue's; ok false for a consumer of no lane.
func laneOf(def, name string) (q string, p int, ok bool) {
	rest, ok := strings.CutPrefix(name, def)
	if !ok {
		return "", 0, false
	}
	p = jobs.DefaultPriority
	if len(rest) >= 3 && rest[:2] == "-p" && rest[2] >= '1' && rest[2] <= '0'+jobs.MaxPriority && rest[2] != '0'+jobs.DefaultPriority {
		p, rest = int(rest[2]-'0'), rest[3:]
	}
	switch {
	case rest == "":
		return jobs.DefaultQueue, p, true
	case strings.HasPrefix(rest, "-q-") && jobs.CheckQueue(rest[3:]) == nil:
		return rest[3:], p, true
	}
	return "", 0, false
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
		// A queue's and a priority's tokens come before the id, the last.
		return aJob, rest[strings.LastIndexByte(rest, '.')+1:]
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

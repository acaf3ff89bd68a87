package jsjobs

import (
	"context"
	"encoding/json"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A running job's progress (jobs.Progress) is a key of its own in the
// records' bucket, progress.<id>, never its record: a first run writes no
// record before its end, and every end, cancel and retry is written over
// the revision of the record it read, which a progress write would move.
//
// What it costs: a run that reports nothing, nothing. A run that reports
// is written at most once a second (jobs.ProgressWriter: the latest report
// of the second is the one written), each write one replicated write of
// the bucket that every process's index reads and ignores (not a job's
// key); once its end is written, one purge of the key (one replicated
// write, its marker expiring after progressGoneTTL). Each progress write carries a TTL, the job's timeout and
// a minute, so that the key of a run killed before its end goes without
// a purge. A Get of a job that reads running reads the key too (one more
// direct get, hedged as the record's); of any other job, nothing more.

// progressKey is the key of job id's progress.
func progressKey(id string) string { return progressPrefix + id }

const progressPrefix = "progress."

// progressGoneTTL is how long the marker of a progress purged at its
// run's end stays.
const progressGoneTTL = time.Minute

// progressValue is the value of a progress key: the report, and the
// attempt of the run that made it, so that a later run does not read an
// earlier one's.
type progressValue struct {
	jobs.ProgressReport
	Attempt int `json:"attempt"`
}

// progressOf returns a ProgressWriter for attempt of job id, whose
// timeout is timeout: each report written over the last, whatever its
// revision (a run has the key to itself).
func (r *Runner) progressOf(id string, attempt int, timeout time.Duration) *jobs.ProgressWriter {
	subject := r.layout.record(progressKey(id))
	return jobs.NewProgressWriter(func(p jobs.ProgressReport) {
		data, err := json.Marshal(progressValue{ProgressReport: p, Attempt: attempt})
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.storeTimeout)
		defer cancel()
		if _, err := r.js.Publish(ctx, subject, data, jetstream.WithMsgTTL(timeout+time.Minute)); err != nil {
			r.logWarn("a job's progress not written", "job", id, "error", err)
		}
	})
}

// purgeProgress purges job id's progress key, once its run has ended
// (its ProgressWriter stopped, having written) and its end is written: a
// purge marker that rolls up the key and expires after progressGoneTTL.
// A purge that fails leaves the key to its TTL; a Get reads the key only
// of a job that reads running, so the end never waits on the purge.
func (r *Runner) purgeProgress(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.storeTimeout)
	defer cancel()
	msg := nats.NewMsg(r.layout.record(progressKey(id)))
	msg.Header.Set("KV-Operation", "PURGE")
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	_, _ = r.js.PublishMsg(ctx, msg, jetstream.WithMsgTTL(progressGoneTTL))
}

// progress reads the progress of rec, a job that reads running, into it:
// nil when its run has reported none, or only an earlier run has. A
// read that fails leaves it nil: the record is the answer.
func (r *records) progress(ctx context.Context, rec *jobs.Record) {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	e, err := hedged(ctx, r.reads, func(ctx context.Context) (jetstream.KeyValueEntry, error) {
		return r.kv.Get(ctx, progressKey(rec.ID))
	})
	if err != nil {
		return // none reported, or not read now
	}
	var v progressValue
	if json.Unmarshal(e.Value(), &v) != nil || v.Attempt < rec.Attempts {
		return
	}
	p := v.ProgressReport
	rec.Progress = &p
}

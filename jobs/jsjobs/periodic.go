package jsjobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natsotel"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Periodic jobs ride on the NATS server's message schedules, as jobs due
// later do. A periodic job's schedule is one message, under
// <stream>-at.every.<name> (no consumer reads it), whose Nats-Schedule is
// the cron expression or "@every": the server, not a replica, keeps its
// time and publishes a tick to <stream>.every.<name> at each, once
// whatever the replicas, none of them a leader, and none of their
// rollouts moving it. The consumer delivers the tick like a job; its
// handling submits the job of that tick, its id made of the periodic's
// name and the tick's stream sequence (tickID), with that id as its
// message id, then acks the tick: a tick delivered again submits the same
// job, stored once. So a tick is one job, however often it is handled, and
// the job is a job like any other (listed, canceled, retried).
//
// A tick handled more than tickGrace after its next tick was due is
// skipped: a newer tick waits behind it, and a periodic job does not
// make up for the ticks its runners missed (none ran, or all were busy).
// The server itself fires a schedule once for ticks missed while it was
// down.

// tickGrace is how late past its next tick's time a tick is still run:
// room for the clocks of the server and of the runner to differ.
const tickGrace = 5 * time.Second

// The server's error codes for a schedule it cannot read.
const (
	errCodeSchedulePattern = 10189 // JSMessageSchedulesPatternInvalidErr
	errCodeScheduleZone    = 10223 // JSMessageSchedulesTimeZoneInvalidErr
)

var _ jobs.Scheduler = (*Runner)(nil)

// SetPeriodic implements jobs.Scheduler.
func (r *Runner) SetPeriodic(ctx context.Context, p jobs.Periodic) (bool, error) {
	if err := p.Validate(); err != nil {
		return false, err
	}
	job, err := r.kinds.Prepare(p.Spec, r.defaultTimeout, r.maxTimeout)
	if err != nil {
		return false, err
	}
	if err := sized(job, maxMessage(r.js.Conn())); err != nil {
		return false, err
	}
	if !r.store.schedules {
		return false, fmt.Errorf("%w: the jobs' stream does not allow message schedules (it was made without them, with discard new)", jobs.ErrUnavailable)
	}
	if err := r.connected(); err != nil {
		return false, err
	}
	if err := r.queueKnown(ctx, job.Queue); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	subj := r.layout.schedule(p.Name)
	m, err := r.store.anyReplica(ctx, subj)
	switch {
	case err == nil && m.Header.Get(headerSchedule) == p.Every && m.Header.Get(headerScheduleZone) == p.TimeZone && bytes.Equal(m.Data, job.Body):
		return false, nil // as it is: its next tick stays where it was
	case err != nil && !errors.Is(err, jetstream.ErrMsgNotFound):
		return false, storeError(err)
	}
	msg := &nats.Msg{Subject: subj, Data: job.Body, Header: nats.Header{}}
	msg.Header.Set(headerSchedule, p.Every)
	msg.Header.Set(headerScheduleTarget, r.layout.tick(p.Name))
	if job.Submitter != "" {
		msg.Header.Set(headerSubmitter, job.Submitter) // the server copies it to each tick
	}
	if p.TimeZone != "" {
		msg.Header.Set(headerScheduleZone, p.TimeZone)
	}
	// Published without a trace context: each tick's job begins a trace of
	// its own.
	if _, err := r.js.PublishMsg(ctx, msg); err != nil {
		var api *jetstream.APIError
		switch {
		case errors.As(err, &api) && api.ErrorCode == errCodeSchedulePattern:
			return false, &jobs.InvalidError{Reason: fmt.Sprintf(`"every" %.80q: want "@every 1h", a cron expression with seconds ("0 30 2 * * *") or @hourly, @daily, @weekly, @monthly, @yearly`, p.Every)}
		case errors.As(err, &api) && api.ErrorCode == errCodeScheduleZone:
			return false, &jobs.InvalidError{Reason: fmt.Sprintf(`"time_zone" %.80q: the NATS server does not know it`, p.TimeZone)}
		}
		return false, storeError(err)
	}
	// The server keeps the latest message's schedule; the older ones go.
	if err := r.store.jobs.Purge(ctx, jetstream.WithPurgeSubject(subj), jetstream.WithPurgeKeep(1)); err != nil {
		r.logWarn("periodic job set, its older schedule left in the stream", "periodic", p.Name, "error", err)
	}
	return true, nil
}

// DeletePeriodic implements jobs.Scheduler.
func (r *Runner) DeletePeriodic(ctx context.Context, name string) error {
	if err := jobs.CheckPeriodicName(name); err != nil {
		return jobs.ErrNotFound
	}
	if err := r.connected(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	subj := r.layout.schedule(name)
	if _, err := r.store.anyReplica(ctx, subj); errors.Is(err, jetstream.ErrMsgNotFound) {
		return jobs.ErrNotFound
	} else if err != nil {
		return storeError(err)
	}
	// The server drops a schedule whose message is gone when it is due.
	if err := r.store.jobs.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
		return storeError(err)
	}
	if err := r.store.kv.Purge(ctx, tickKey(name)); err != nil {
		r.logWarn("periodic job deleted, the note of its last tick left (set again, it shows until its first tick)", "periodic", name, "error", err)
	}
	return nil
}

// Periodics implements jobs.Scheduler.
func (r *Runner) Periodics(ctx context.Context) ([]jobs.Periodic, error) {
	if err := r.connected(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	prefix := r.layout.schedules()
	info, err := r.store.jobs.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, storeError(err)
	}
	names := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		names = append(names, strings.TrimPrefix(subj, prefix))
	}
	slices.Sort(names)
	ps := make([]jobs.Periodic, 0, len(names))
	for _, name := range names {
		m, err := r.store.anyReplica(ctx, prefix+name)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // deleted meanwhile
		} else if err != nil {
			return nil, storeError(err)
		}
		p := jobs.Periodic{Name: name, Every: m.Header.Get(headerSchedule), TimeZone: m.Header.Get(headerScheduleZone)}
		_ = json.Unmarshal(m.Data, &p.Spec)
		p.Spec.Submitter = m.Header.Get(headerSubmitter)
		note, err := r.tickNote(ctx, name)
		if err != nil {
			return nil, err
		}
		p.Last, p.Next, p.Recent = note.Last, note.Next, note.Recent
		ps = append(ps, p)
	}
	return ps, nil
}

// tick submits the job of a periodic job's tick (see above): d, the
// tick's message, its next tick due at d.tickNext; or skips a tick whose
// next is past due. The job is the periodic's, submitted by its setter.
func (r *Runner) tick(ctx context.Context, name string, d delivery) error {
	data, seq, next := d.data, d.seq, d.tickNext
	if due, err := time.Parse(time.RFC3339Nano, next); err == nil && time.Since(due) > tickGrace {
		r.instruments.ticked(false)
		r.logWarn("a periodic job's tick skipped: its next was due", "periodic", name, "next", next)
		return nil
	}
	if seq == 0 {
		return natsjs.Unavailable(fmt.Errorf("%w: a periodic job's tick without its stream sequence", jobs.ErrUnavailable))
	}
	id := tickID(name, seq, r.partition)
	var spec struct {
		Queue    string
		Priority int
	}
	_ = json.Unmarshal(data, &spec) // its queue and priority found when it was set
	msg := &nats.Msg{Subject: r.layout.in(spec.Queue, spec.Priority, id), Data: data, Header: nats.Header{}}
	msg.Header.Set(headerPeriodic, name)
	if d.submitter != "" {
		msg.Header.Set(headerSubmitter, d.submitter)
	}
	pctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	if _, err := natsotel.Publish(pctx, r.js, msg, jetstream.WithMsgID(id)); err != nil {
		return natsjs.Unavailable(storeError(err))
	}
	r.instruments.ticked(true)
	r.noteTick(ctx, name, id, next)
	return nil
}

// tickID is the id of the job a periodic job's tick submits: the same for
// every delivery of that tick, another for every tick.
func tickID(name string, seq uint64, partition int) string {
	sum := sha256.Sum256([]byte(everyToken + name + "." + strconv.FormatUint(seq, 10)))
	if partition >= 0 { // in the partition whose stream ticks (partition.go)
		sum[0] = byte(partition)
	}
	return hex.EncodeToString(sum[:jobs.IDLen/2])
}

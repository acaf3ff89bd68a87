package jsjobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
)

// errTimedOut ends a job's context at its own timeout, to tell it from the
// end of the task's context (a hard stop, a lost lease).
var errTimedOut = errors.New("job timed out")

// Handle is the natsjs.Handler of the jobs' stream: it runs one delivered
// job and keeps its record. Returning nil acks the message, an error naks
// it for a later run; a run's end is written off the pool's slot
// (natsjs.Then), and the message settled on that write. It is idempotent:
// a job whose record is already terminal is acked without running again.
// A run that succeeds is recorded and acked; one that fails or times out
// is retried after a backoff (recorded retrying, handed back with that
// delay) while attempts remain
// and its error is not jobs.Permanent, else recorded failed or timed_out
// and acked; one that asks for jobs.Snooze runs again after its wait with
// no attempt counted; one interrupted runs again. At most the job's max
// attempts runs are started. An outage of the store is not the job's
// failure: a job whose start cannot be recorded runs again after a moment
// on the same delivery (natsjs.Unavailable), with no attempt counted; after
// its run, the record of its end is written again while the job's lease
// holds, and after that from memory (late.go), rather than run the job
// again. Every write of the record is stored before Handle returns,
// so before the message is acked away: Get finds a job that ends while it
// reads by that order (find).
//
// A job's first delivery, on its first run, starts its run at once, reads
// the record meanwhile (mark, off the run's slot) and writes nothing before
// the run's end: the job is accepted, run and ended in three replicated
// writes (its message, its end, its ack), and Get tells it running from
// the consumer's state.
// Should the record say the job must not run (a duplicate of one ended) or
// be out of reach, the run is cancelled and the delivery settled as above;
// that run never counts, and at-least-once allows its start. So a cancel
// whose write comes just after a job's delivery (Cancel read it queued)
// lets its run begin, cancelled once the record is read. A redelivery,
// which more likely finds the job ended, reads the record and writes it
// running, one more attempt, before it runs; a first run killed before its
// end wrote nothing, so the job's attempts count from its second run.
func (r *Runner) Handle(ctx context.Context, m *natsjs.Msg) error {
	var published time.Time
	var seq uint64
	if md, err := m.Raw().Metadata(); err == nil {
		published, seq = created(m.Header(), md.Timestamp), md.Sequence.Stream
	}
	d := delivery{subject: m.Subject(), data: m.Data(), published: published, seq: seq, attempt: m.Attempt(), again: m.Runs() > 1}
	if what, _ := r.layout.parse(d.subject); what == aTick {
		d.tickNext = m.Raw().Headers().Get(headerScheduleNext) // a periodic job's tick (periodic.go)
	}
	d.retryOf, _ = strconv.ParseUint(m.Raw().Headers().Get(headerRetryOf), 10, 64)
	d.retries, _ = strconv.Atoi(m.Raw().Headers().Get(headerRetries))
	return r.handle(ctx, d)
}

// delivery is what handle needs of a message.
type delivery struct {
	subject   string
	data      []byte
	published time.Time
	attempt   int    // the server's delivery count, 1 for the first (0: not known)
	again     bool   // run again on the same delivery after an outage (natsjs.Unavailable)
	retryOf   uint64 // a Retry's message: the revision of the ended record it retries
	retries   int    // a Retry's message: the record's Retries once that Retry is recorded (0: not known)
	spec      *jobs.Spec
	seq       uint64 // the message's stream sequence (0: not known)
	tickNext  string // a periodic job's tick: when its next is due (Nats-Schedule-Next)
}

// before reports whether d is a message of the job from before its latest
// Retry, which rec records: the job's first message once it was retried,
// or the message of an earlier Retry.
func (d delivery) before(rec jobs.Record) bool {
	return d.retryOf == 0 && rec.Retries > 0 || d.retries > 0 && d.retries != rec.Retries
}

// unaccounted is how many of d's message's deliveries before d the
// record rec does not account for: every run writes the delivery it ran
// on into its record (Deliveries) at its start or its end, so a delivery
// missing from it ran and was interrupted before it could write (a
// delivery handed back unrun by a stop counts as one too: the store
// cannot tell them apart).
func (d delivery) unaccounted(rec jobs.Record) int {
	if d.attempt <= 1 {
		return 0
	}
	return max(0, d.attempt-1-rec.Deliveries)
}

// errNotMarked cancels a first delivery's run whose record could not be
// read, or says it must not run.
var errNotMarked = errors.New("job's start not recorded")

func (r *Runner) handle(ctx context.Context, d delivery) error {
	what, id := r.layout.parse(d.subject)
	if what == aTick {
		return r.tick(ctx, id, d)
	}
	if what != aJob || !jobs.ValidID(id) {
		r.logWarn("not a job: acked without running", "subject", d.subject)
		return nil
	}
	if e, ok := r.takeLateFor(id, d); ok {
		// Its last run ended here and the end waits to be written: the
		// delivery writes it rather than run the job again.
		return natsjs.Then(func(ctx context.Context) error {
			return r.writeEnd(ctx, e.rev, e.rec, true)
		})
	}
	var spec jobs.Spec
	var job jobs.Prepared
	var bad string // why the spec cannot run
	dec := json.NewDecoder(bytes.NewReader(d.data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&spec)
	// Delivered, a job due later is due: however late it comes (a fault, a
	// retry's backoff), its time is no reason to refuse it.
	spec.RunAt = time.Time{}
	if err != nil {
		spec, bad = jobs.Spec{}, "undecodable job: "+err.Error()
	} else if job, err = r.kinds.Prepare(spec, r.defaultTimeout, r.maxTimeout); errors.Is(err, jobs.ErrUnknownKind) || errors.Is(err, jobs.ErrUnknownField) {
		// A kind, or a field of its arguments, that its submitter had and
		// this worker lacks: a deploy that reached the submitters first.
		// Each run here is a failed attempt, retried with backoff, until
		// a worker that has them takes it or the attempts are spent.
		lacked := fmt.Errorf("this worker lacks it: %w", err)
		job = jobs.Prepared{Timeout: r.defaultTimeout, MaxAttempts: spec.MaxAttempts, Run: func(context.Context) (json.RawMessage, error) {
			return nil, lacked
		}}
		d.spec = &spec
	} else if err != nil {
		bad = err.Error()
	} else {
		d.spec = &spec
	}
	var run jobRun
	var m marking
	// A cancel of the job ends the run's context (cancel.go).
	ctx, done, canceled := r.running.start(ctx, id)
	defer done()
	// A Retry's message runs a job that has a record, which may say it
	// must not run (canceled since): it is read first; so is the record of
	// a job whose cancel was heard here (cancel.go, runs).
	if d.attempt == 1 && !d.again && bad == "" && d.retryOf == 0 && !canceled {
		runCtx, stop := context.WithCancelCause(ctx)
		marked := make(chan marking, 1)
		go func() {
			m := r.mark(ctx, id, d, spec.Kind, "", r.attempts(job), true)
			if m.settled {
				stop(errNotMarked)
			}
			marked <- m
		}()
		// A first delivery's record is made by this run: attempt 1.
		run = runJob(jobs.WithInfo(runCtx, jobs.Info{ID: id, Kind: spec.Kind, Attempt: 1}), job)
		stop(nil)
		m = <-marked
	} else {
		m = r.mark(ctx, id, d, spec.Kind, bad, r.attempts(job), false)
		if !m.settled {
			run = runJob(jobs.WithInfo(ctx, jobs.Info{ID: id, Kind: spec.Kind, Attempt: m.rec.Attempts}), job)
		}
	}
	if m.settled {
		return m.err
	}
	return r.ended(ctx, m, spec.Kind, run, job)
}

// attempts is the most runs job may take: its spec's or kind's bound, else
// the runner's.
func (r *Runner) attempts(job jobs.Prepared) int {
	if job.MaxAttempts > 0 {
		return job.MaxAttempts
	}
	return r.maxAttempts
}

// marking is what mark found: the record marked running at rev, or the
// delivery settled (err nil: ack; else nak) without a run that counts.
type marking struct {
	rec     jobs.Record
	rev     uint64
	settled bool
	err     error
}

// mark reads the job's record and writes it running, one more attempt
// (unless it is a first delivery's of a job without a record: its run
// writes nothing before its end):
// unless it already ended (acked, not run), the spec is bad (says why)
// or its runs were all interrupted as often as allowed (failed, acked), or
// the store cannot be reached (run again later, no attempt counted). The write
// is made only over the record read, so a run of the same job elsewhere
// (a redelivery after a lost lease) that ended meanwhile is not undone; a
// write refused is decided again on the record the leader holds since.
func (r *Runner) mark(ctx context.Context, id string, d delivery, kind, bad string, maxAttempts int, first bool) marking {
	settle := func(err error) marking { return marking{settled: true, err: err} }
	// The record's writes outlive a job cancelled by a hard stop.
	wctx := context.WithoutCancel(ctx)
	rec, rev, err := r.load(ctx, id)
	if err == nil || errors.Is(err, jobs.ErrNotFound) {
		r.health.ok()
	}
	for refusals := 0; ; refusals++ {
		write := true
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			// The message is the job; a first run writes nothing before
			// its end.
			rec = jobs.Record{ID: id, State: jobs.Queued, Created: d.published}
			write = !first
		case err != nil:
			return settle(r.unavailable(err))
		case !rec.State.Terminal() && d.before(rec):
			// A message of a run before the job's latest Retry (handed
			// back with a backoff, then the job canceled and retried): the
			// Retry's own message runs it.
			r.logWarn("a job's message from before its latest retry: acked, not run", "job", id, "retries", rec.Retries, "retry_of", d.retryOf)
			r.instruments.skipped()
			return settle(nil)
		case rec.State.Terminal() && (d.retryOf == 0 || d.retryOf != rev):
			if d.retryOf != 0 {
				// Rare: a Retry that gave way to another; said, so that a
				// retried job that does not run can be traced.
				r.logWarn("a retry's message finds its job ended otherwise: acked, not run", "job", id, "state", string(rec.State), "rev", rev, "retry_of", d.retryOf)
			}
			r.instruments.skipped()
			return settle(nil)
		case rec.State.Terminal():
			// The message of a Retry of this very record, delivered before
			// the Retry wrote it queued.
			rec = retried(rec)
		}
		if d.spec != nil {
			rec.Spec = d.spec
		}
		if kind != "" {
			rec.Kind = kind
		}
		if bad != "" {
			return settle(r.finish(ctx, rev, rec, jobs.Failed, nil, bad))
		}
		// The deliveries since the record's last write that it does not
		// account for were runs interrupted before they wrote anything: a
		// first run killed (it writes nothing before its end), or a run
		// whose process died while the store was out.
		rec.Attempts += d.unaccounted(rec)
		if rec.Attempts >= maxAttempts {
			// Its attempts are spent, the last interrupted: a job that kills
			// its process would otherwise run for ever.
			return settle(r.finish(ctx, rev, rec, jobs.Failed, nil, fmt.Sprintf("given up: %d runs started, the last one interrupted", rec.Attempts)))
		}
		rec.State, rec.Attempts, rec.Error, rec.NextRun = jobs.Running, rec.Attempts+1, "", time.Time{}
		if d.attempt > 0 {
			rec.Deliveries = d.attempt
		}
		rec.Trace = r.instruments.runTrace(ctx, rec)
		if !write {
			return marking{rec: rec, rev: rev}
		}
		var wrote uint64
		wrote, err = r.swap(wctx, rec, rev)
		switch {
		case err == nil:
			return marking{rec: rec, rev: wrote}
		case !errors.Is(err, errChanged):
			return settle(r.unavailable(err)) // no attempt spent
		case refusals == maxRefusals:
			return settle(r.unavailable(fmt.Errorf("%w: job %s's record keeps changing", jobs.ErrUnavailable, id)))
		}
		rec, rev, err = r.leaderRecordAfter(ctx, id, rev)
	}
}

// maxRefusals bounds how often a write of a record, refused because it
// changed, is decided again on what it changed to.
const maxRefusals = 5

// jobRun is how one run went.
type jobRun struct {
	value    json.RawMessage
	err      error
	took     time.Duration
	timedOut bool // ended by the job's own timeout
}

// runJob runs a job within its timeout. A panic of the kind's function
// is its run's error (a *crew.PanicError, as memjobs records it): a failed
// attempt, retried while attempts remain, not an interrupted run.
func runJob(ctx context.Context, job jobs.Prepared) (run jobRun) {
	jctx, cancel := context.WithTimeoutCause(ctx, job.Timeout, errTimedOut)
	defer cancel()
	started := time.Now()
	defer func() {
		if p := recover(); p != nil {
			run = jobRun{err: &crew.PanicError{Task: "job:" + jobs.InfoOf(ctx).Kind, Value: p, Stack: debug.Stack()},
				took: time.Since(started), timedOut: errors.Is(context.Cause(jctx), errTimedOut)}
		}
	}()
	v, err := job.Run(jctx)
	return jobRun{value: v, err: err, took: time.Since(started), timedOut: errors.Is(context.Cause(jctx), errTimedOut)}
}

// ended records how a marked run ended: its end (succeeded, or failed or
// timed_out with its attempts spent or a permanent error), the job
// retrying after a backoff (or a snooze, which counts no attempt), or,
// interrupted by ctx (a hard stop, a lost lease), the job queued again and
// handed back to run again. An end or a retry is written off the run's
// slot (natsjs.Then), which the next job may take meanwhile: the run is
// over, and its message stays held, its lease kept, until the write is
// stored and the message settled on it.
func (r *Runner) ended(ctx context.Context, m marking, kind string, run jobRun, job jobs.Prepared) error {
	rec := m.rec
	outcome := string(jobs.Failed)
	switch {
	case run.err == nil && !run.timedOut:
		// A run that ignored its context and returned past its timeout
		// timed out, whatever it returned (as memjobs records it).
		outcome = string(jobs.Succeeded)
	case errors.Is(context.Cause(ctx), errJobCanceled):
		outcome = string(jobs.Canceled)
	case ctx.Err() != nil:
		outcome = interrupted
	case run.timedOut:
		outcome = string(jobs.TimedOut)
	}
	r.instruments.ran(ctx, kind, outcome, run.took)
	switch outcome {
	case string(jobs.Succeeded):
		return natsjs.Then(func(ctx context.Context) error {
			return r.finish(ctx, m.rev, rec, jobs.Succeeded, run.value, "")
		})
	case string(jobs.Canceled):
		// Its record says so already, written by the cancel.
		r.instruments.spanOutcome(ctx, string(jobs.Canceled))
		return nil
	case interrupted:
		// Interrupted, not failed: queued again, to run again here or
		// elsewhere.
		why := context.Cause(ctx)
		if why == nil { // a context that keeps no cause (a lost lease)
			why = ctx.Err()
		}
		rec.State, rec.Error = jobs.Queued, "interrupted ("+why.Error()+"), to run again"
		// Unless another run has written it since (the lease lost, the job
		// redelivered); if this fails, the record says running until the
		// next run.
		_, _ = r.swap(context.WithoutCancel(ctx), rec, m.rev)
		r.instruments.requeued(ctx)
		return fmt.Errorf("job %s interrupted: %w", rec.ID, why)
	}
	if d, ok := jobs.SnoozedFor(run.err); ok {
		rec.Attempts-- // a snoozed run is no attempt
		return natsjs.Then(func(ctx context.Context) error {
			return r.retry(ctx, m.rev, rec, d, "snoozed")
		})
	}
	st, msg := jobs.TimedOut, fmt.Sprintf("job timed out after %v", job.Timeout)
	if outcome != string(jobs.TimedOut) {
		st, msg = jobs.Failed, run.err.Error()
	}
	rec.AddError(msg, time.Now())
	if jobs.IsPermanent(run.err) || rec.Attempts >= r.attempts(job) {
		return natsjs.Then(func(ctx context.Context) error {
			return r.finish(ctx, m.rev, rec, st, nil, rec.Error) // msg as AddError clipped it
		})
	}
	d := r.backoff(rec.Attempts)
	return natsjs.Then(func(ctx context.Context) error {
		return r.retry(ctx, m.rev, rec, d, string(st))
	})
}

// retry records the job retrying, due after d, and has the Source hand it
// back with that delay. The record is kept as finish keeps an end, while
// the store is out and the lease holds.
func (r *Runner) retry(ctx context.Context, rev uint64, rec jobs.Record, d time.Duration, why string) error {
	rec.State, rec.NextRun = jobs.Retrying, time.Now().Add(d)
	if err := r.keep(ctx, rev, rec); err != nil {
		return r.gaveWay(err)
	}
	r.instruments.backedOff(ctx, rec.Kind, why)
	return natsjs.RetryAfter(fmt.Errorf("job %s %s: next run in %v", rec.ID, why, d.Round(time.Millisecond)), d)
}

// finish records a job's end. If the record cannot be written at all the
// job is handed back and runs again: at-least-once.
func (r *Runner) finish(ctx context.Context, rev uint64, rec jobs.Record, st jobs.State, result json.RawMessage, msg string) error {
	rec.State, rec.Result, rec.Error, rec.Finished, rec.NextRun = st, result, msg, time.Now(), time.Time{}
	if st == jobs.Succeeded {
		rec.Spec = nil // kept only for a Retry, of a job that did not succeed
	}
	r.instruments.spanOutcome(ctx, string(st))
	return r.writeEnd(ctx, rev, rec, false)
}

// writeEnd writes a run's end over revision rev (keep) and counts it
// (late: an end kept after its lease was lost); an end the lease's loss
// left unwritten is kept to write later (late.go).
func (r *Runner) writeEnd(ctx context.Context, rev uint64, rec jobs.Record, late bool) error {
	if err := r.keep(ctx, rev, rec); err != nil {
		if ctx.Err() != nil && errors.Is(err, jobs.ErrUnavailable) {
			r.keepLate(rec, rev)
		}
		return r.gaveWay(err)
	}
	r.instruments.ended(rec.State, late)
	return nil
}

// keep writes a record after a run, over the revision its run read (0:
// none), so that an end and a cancel that race leave one terminal state:
// a record changed meanwhile is read again, and if it has ended (canceled,
// or ended by another run of the job), or ended and been retried by hand
// since, keep gives way with errEnded; a record changed but live (another
// run's start) is written over. While the
// store is out, the write is tried again, the job's lease kept, until it
// succeeds or ctx ends (the lease lost): an outage of a few seconds (a
// leader elected again) costs the job no second run. An end still
// unwritten then is kept to write later (late.go).
func (r *Runner) keep(ctx context.Context, rev uint64, rec jobs.Record) error {
	wctx := context.WithoutCancel(ctx)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		var err error
		rev, err = r.keepOnce(wctx, rev, rec)
		if err == nil {
			r.health.ok()
			return nil
		}
		if !errors.Is(err, jobs.ErrUnavailable) {
			return err
		}
		r.health.outage(err)
		select {
		case <-ctx.Done():
			// The lease lost or the run cancelled: the message is left to
			// come back or handed back, not run again here, so this is no
			// run put off (StoreHandBacks).
			return natsjs.Unavailable(err)
		case <-time.After(wait):
		}
	}
}

// keepOnce is one try of keep: nil once written, errEnded when the record
// has ended meanwhile (or ended and been retried by hand since),
// ErrUnavailable while the store is out; rev is the revision the next try
// writes over.
func (r *Runner) keepOnce(ctx context.Context, rev uint64, rec jobs.Record) (uint64, error) {
	for {
		_, err := r.swap(ctx, rec, rev)
		if !errors.Is(err, errChanged) {
			return rev, err
		}
		var now jobs.Record
		now, rev, err = r.leaderRecordAfter(ctx, rec.ID, rev) // not a replica's stale copy
		if err != nil {
			return rev, err
		}
		// A record of another Retries was ended and retried by hand
		// since this run read it: its queued or running record is the
		// Retry's, a life of the job after this run's, and an end of
		// this run written over it would undo the Retry (its message
		// would then find the job ended and not run it).
		if now.State.Terminal() || now.Retries != rec.Retries {
			return rev, errEnded
		}
	}
}

// errEnded is keep giving way to an end or a cancel recorded first.
var errEnded = errors.New("job ended meanwhile")

// gaveWay settles a run whose record write gave way: acked, counted
// skipped, when the job had ended meanwhile; err itself otherwise.
func (r *Runner) gaveWay(err error) error {
	if errors.Is(err, errEnded) {
		r.instruments.skipped()
		return nil
	}
	return err
}

func (r *Runner) logWarn(msg string, args ...any) {
	if r.log != nil {
		r.log.Warn(msg, args...)
	}
}

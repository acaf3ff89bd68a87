package jsjobs

import (
	"context"
	"strconv"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
)

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
	d.submitter = m.Raw().Headers().Get(headerSubmitter)
	return r.handle(ctx, d)
}

func (r *Runner) handle(ctx context.Context, d delivery) error {
	what, id := r.layout.parse(d.subject)
	if what == aTick {
		return r.tick(ctx, id, d)
	}
	if what != aJob || !jobs.ValidID(id) {
		r.logWarn("not a job: acked without running", "subject", d.subject)
		return nil
	}
	if e, ok := r.late.takeFor(id, d.retryOf, d.retries); ok {
		// Its last run ended here and the end waits to be written: the
		// delivery writes it rather than run the job again.
		return natsjs.Then(func(ctx context.Context) error {
			return r.writeEnd(ctx, e.rev, e.rec, true)
		})
	}
	j := r.decode(id, d.data)
	if j.bad == "" {
		// Its start under its queue's rate, if the queue has one (rate.go).
		if err := r.paced(ctx, j.job.Queue); err != nil {
			return err
		}
	}
	var run jobRun
	var m marking
	// A cancel of the job ends the run's context (running.go).
	ctx, done, canceled := r.running.start(ctx, jobs.RunningJob{ID: id, Kind: j.kind, Queue: j.job.Queue, Since: time.Now()})
	defer done()
	// A run that reported progress has its key purged once its end is
	// written (progress.go): the end waits on no purge.
	var reported bool
	defer func() {
		if reported {
			r.purgeProgress(ctx, id)
		}
	}()
	// A Retry's message runs a job that has a record, which may say it
	// must not run (canceled since): it is read first; so is the record of
	// a job whose cancel was heard here (running.go, runs).
	if d.attempt == 1 && !d.again && j.bad == "" && d.retryOf == 0 && !canceled {
		runCtx, stop := context.WithCancelCause(ctx)
		marked := make(chan marking, 1)
		go func() {
			m := r.mark(ctx, d, j, true)
			if m.settled {
				stop(errNotMarked)
			}
			marked <- m
		}()
		// A first delivery's record is made by this run: attempt 1.
		progress := r.progressOf(id, 1, j.job.Timeout)
		run = runJob(jobs.WithProgress(r.runContext(runCtx, j, 1), progress), j.job)
		reported = progress.Stop()
		stop(nil)
		m = <-marked
	} else {
		m = r.mark(ctx, d, j, false)
		if !m.settled {
			progress := r.progressOf(id, m.rec.Attempts, j.job.Timeout)
			run = runJob(jobs.WithProgress(r.runContext(ctx, j, m.rec.Attempts), progress), j.job)
			reported = progress.Stop()
		}
	}
	if m.settled {
		return m.err
	}
	return r.ended(ctx, m, j, run)
}

// runContext is a run's context: what it knows of its job (jobs.InfoOf),
// and a Getter of its store for its parents' results (jobs.ParentResult).
func (r *Runner) runContext(ctx context.Context, j decoded, attempt int) context.Context {
	info := jobs.Info{ID: j.id, Kind: j.kind, Attempt: attempt}
	if j.spec != nil {
		info.After = j.spec.After
	}
	get := r.get
	if get == nil {
		get = r.Get
	}
	return jobs.WithGetter(jobs.WithInfo(ctx, info), get)
}

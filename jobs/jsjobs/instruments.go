package jsjobs

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs/natsotel"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// instruments are what a Runner tells of its jobs: its Prometheus
// metrics, the attributes of its runs' spans and its outcome counts, each
// named under Config.Namespace (metrics <namespace>_job_run_seconds and
// the like, span attributes <namespace>.job.id and the like), so that a
// program shows its own name on its dashboards. Each event of a job is
// one method here, which counts it everywhere it is counted.
type instruments struct {
	runs                                                *prometheus.HistogramVec // <ns>_job_run_seconds{kind,outcome}
	cancels, backoffs, reruns, ticks, deletes           *prometheus.CounterVec
	storeUp, storeHandBacks, storeReads, storeReadTries *prometheus.Desc
	queueJobs, queueLimit, queuePaused, queueOldest     *prometheus.Desc
	queues                                              queueGauges // the queues as these export them

	id, kind, attempt, outcome attribute.Key // of a run's span

	counts struct {
		succeeded, failed, timedOut, retried, snoozed, canceled, requeued, skipped, retriedByHand, late atomic.Uint64
		ticks, ticksSkipped                                                                             atomic.Uint64
	}
}

// DefaultNamespace is Config.Namespace's default.
const DefaultNamespace = "crew"

// interrupted labels a run that ended by its context (a hard stop, a lost
// lease): the job is queued again, not ended.
const interrupted = "interrupted"

func newInstruments(ns string) *instruments {
	return &instruments{
		runs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: ns + "_job_run_seconds",
			Help: "Time a durable job's run took, by kind and how it ended (succeeded, failed, timed_out, interrupted); " +
				"a sampled run leaves its trace id as an exemplar.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms to 4.4 min
		}, []string{"kind", "outcome"}),
		cancels: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ns + "_jobs_canceled_total",
			Help: "Jobs canceled, by the state they were in when the cancel was recorded (scheduled, queued, running, retrying).",
		}, []string{"state"}),
		backoffs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ns + "_job_backoffs_total",
			Help: "Runs that left their job retrying after a backoff, by kind and why (failed, timed_out, snoozed).",
		}, []string{"kind", "why"}),
		reruns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ns + "_jobs_rerun_total",
			Help: "Ended jobs run again by a retry request (dead letters), by the state they had ended in (failed, timed_out, canceled, not_run).",
		}, []string{"state"}),
		deletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ns + "_jobs_deleted_total",
			Help: "Ended jobs deleted by hand before their retention, by the state they ended in.",
		}, []string{"state"}),
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ns + "_job_ticks_total",
			Help: "Ticks of periodic jobs handled here, by outcome: submitted (the tick's job) or skipped (taken after its next tick was due).",
		}, []string{"outcome"}),
		storeUp: prometheus.NewDesc(ns+"_job_store_up",
			"1 while the job store (the jobs' stream and the records' bucket) answers this process, 0 during an outage.", nil, nil),
		storeHandBacks: prometheus.NewDesc(ns+"_job_store_unavailable_total",
			"Runs of jobs put off, without costing an attempt, because the job store could not be reached: each job runs again a moment later.", nil, nil),
		storeReads: prometheus.NewDesc(ns+"_job_store_reads_total",
			"Reads of jobs' records and messages that any replica answers (direct gets).", nil, nil),
		storeReadTries: prometheus.NewDesc(ns+"_job_store_read_tries_total",
			"Requests those reads sent: a read unanswered for a while is sent again, to another replica, and, for a while after a replica seems cut off, four times at once; its excess over "+ns+"_job_store_reads_total is what the hedging cost.", nil, nil),
		queueJobs: prometheus.NewDesc(ns+"_queue_jobs",
			"Jobs of a queue across every process, by state: waiting (its backlog) or taken (running, or held for a free worker); the same on every process.",
			[]string{"queue", "state"}, nil),
		queueLimit: prometheus.NewDesc(ns+"_queue_limit",
			"A queue's bound on its jobs running at once across every process; 0: none.", []string{"queue"}, nil),
		queuePaused: prometheus.NewDesc(ns+"_queue_paused",
			"1 while a queue is paused for every process, else 0.", []string{"queue"}, nil),
		queueOldest: prometheus.NewDesc(ns+"_queue_oldest_waiting_seconds",
			"How long a queue's oldest waiting job has waited since it was due (0: none waits); the same on every process.", []string{"queue"}, nil),
		id:      attribute.Key(ns + ".job.id"),
		kind:    attribute.Key(ns + ".job.kind"),
		attempt: attribute.Key(ns + ".job.attempt"),
		outcome: attribute.Key(ns + ".job.outcome"),
	}
}

// validNamespace reports whether ns can begin a Prometheus metric name.
func validNamespace(ns string) bool {
	for i, c := range ns {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return ns != ""
}

// ran records one run's time, its trace as exemplar.
func (in *instruments) ran(ctx context.Context, kind, outcome string, d time.Duration) {
	o := in.runs.WithLabelValues(kind, outcome)
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if e, ok := o.(prometheus.ExemplarObserver); ok {
			e.ObserveWithExemplar(d.Seconds(), prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	o.Observe(d.Seconds())
}

// ended counts a run's end, written (late: after its lease was lost).
func (in *instruments) ended(st jobs.State, late bool) {
	if late {
		in.counts.late.Add(1)
	}
	switch st {
	case jobs.Succeeded:
		in.counts.succeeded.Add(1)
	case jobs.TimedOut:
		in.counts.timedOut.Add(1)
	default:
		in.counts.failed.Add(1)
	}
}

// backedOff counts a run that left its job retrying, why (failed,
// timed_out, snoozed).
func (in *instruments) backedOff(ctx context.Context, kind, why string) {
	if why == "snoozed" {
		in.counts.snoozed.Add(1)
	} else {
		in.counts.retried.Add(1)
	}
	in.backoffs.WithLabelValues(kind, why).Inc()
	in.spanOutcome(ctx, "retrying")
}

// requeued counts a run interrupted, its job handed back.
func (in *instruments) requeued(ctx context.Context) {
	in.counts.requeued.Add(1)
	in.spanOutcome(ctx, interrupted)
}

// skipped counts a delivery acked unrun: its job had ended, or the
// delivery is of a run before the job's latest Retry.
func (in *instruments) skipped() { in.counts.skipped.Add(1) }

// canceled counts a job canceled while in state was.
func (in *instruments) canceled(was jobs.State) {
	in.counts.canceled.Add(1)
	in.cancels.WithLabelValues(string(was)).Inc()
}

// deleted counts an ended job, in state was, deleted by hand.
func (in *instruments) deleted(was jobs.State) {
	in.deletes.WithLabelValues(string(was)).Inc()
}

// rerun counts an ended job, in state was, run again by a Retry.
func (in *instruments) rerun(was jobs.State) {
	in.counts.retriedByHand.Add(1)
	in.reruns.WithLabelValues(string(was)).Inc()
}

// ticked counts a periodic job's tick: its job submitted, or skipped.
func (in *instruments) ticked(submitted bool) {
	if submitted {
		in.counts.ticks.Add(1)
		in.ticks.WithLabelValues("submitted").Inc()
		return
	}
	in.counts.ticksSkipped.Add(1)
	in.ticks.WithLabelValues("skipped").Inc()
}

// runTrace marks the run's span with the job, links it to the span of the
// job's previous run (the record keeps that run's traceparent: a
// redelivered message carries only its publish's context), and returns
// what the record keeps of this run for the next: its traceparent when
// it is sampled, else what it held.
func (in *instruments) runTrace(ctx context.Context, rec jobs.Record) string {
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(in.id.String(rec.ID), in.kind.String(rec.Kind), in.attempt.Int(rec.Attempts))
	if rec.Trace != "" {
		prev := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": rec.Trace})
		if sc := trace.SpanContextFromContext(prev); sc.IsValid() {
			span.AddLink(natsotel.PreviousAttempt(sc))
		}
	}
	if !span.SpanContext().IsSampled() {
		return rec.Trace
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// spanOutcome marks the run's span with how it ended.
func (in *instruments) spanOutcome(ctx context.Context, outcome string) {
	trace.SpanFromContext(ctx).SetAttributes(in.outcome.String(outcome))
}

// Outcomes counts what this process's Handle did with the jobs delivered
// to it.
type Outcomes struct {
	Succeeded, Failed, TimedOut uint64 // runs ended, recorded and acked
	Retried                     uint64 // runs failed or timed out with attempts left: the job runs again after a backoff
	Snoozed                     uint64 // runs that asked to run again later (jobs.Snooze), no attempt counted
	Requeued                    uint64 // runs interrupted, handed back to run again
	LateEnds                    uint64 // ends written after their lease was lost (late.go), counted above too
	Skipped                     uint64 // redeliveries of jobs already finished: acked, not run
	Canceled                    uint64 // jobs canceled through this runner
	RetriedByHand               uint64 // ended jobs run again through this runner's Retry
	Ticks, TicksSkipped         uint64 // periodic jobs' ticks that submitted their job, and those skipped (periodic.go)
}

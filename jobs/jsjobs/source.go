package jsjobs

import (
	"context"
	"fmt"

	"github.com/crew-go/crew"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natsotel"
)

// A job's trace, through OpenTelemetry's global TracerProvider and
// propagator (no-ops unless the program sets them): the caller's span (an
// HTTP request's, say) is the parent of the publish (natsotel), whose W3C
// context travels in the message's headers; each run (TracedHandle) is a
// child of the publish on whichever process pulls the job, with its id,
// kind, attempt and outcome, and linked to the job's previous run when it
// runs again (runTrace).

// Source makes the natsjs.Source that runs the default queue's jobs (and
// the periodic jobs' ticks) on pool: TracedHandle on the consumer, each
// ack confirmed by the server (so that a finished job is not run again
// after a crash), tasks named "job", and the journal of Config.Journal if
// set; opts come after those and may override them. It reads the queue's
// priorities in order, each a consumer of its own (lanes.go). Its Run
// pulls until its context ends. QueueSource serves a named queue.
func (r *Runner) Source(pool *crew.Pool, opts ...natsjs.Option) (*natsjs.Source, error) {
	return r.source(context.Background(), jobs.DefaultQueue, pool, r.store.cons, r.journal, opts)
}

// source is a Source on queue q's lanes, cons its default priority's
// (lanes.go), with its journal if not "".
func (r *Runner) source(ctx context.Context, q string, pool *crew.Pool, cons jetstream.Consumer, journal string, opts []natsjs.Option) (*natsjs.Source, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: a Source needs a pool", natsjs.ErrInvalidOption)
	}
	r.announcer.start()
	r.deps.follow() // so that this process releases waiting jobs (deps.go)
	lanes, err := r.lanes(ctx, q, cons)
	if err != nil {
		return nil, err
	}
	base := []natsjs.Option{natsjs.WithDoubleAck(), natsjs.WithTaskName("job"), natsjs.WithLanes(lanes...)}
	if journal != "" {
		base = append(base, natsjs.WithConn(r.js.Conn()), natsjs.WithJournal(journal), natsjs.WithRecovered(r.interrupted))
	}
	// cons, the queue's own consumer (its default priority's), names the
	// Source: natsjs_consumer_lag{consumer} is the queue's, its lanes'
	// lags summed.
	return natsjs.New(pool, cons, r.TracedHandle(), append(base, opts...)...)
}

// TracedHandle is Handle inside a consumer span, a child of the request
// that accepted the job.
func (r *Runner) TracedHandle() natsjs.Handler {
	return natsotel.Handler(r.Handle)
}

// QueueSource makes the natsjs.Source that runs queue q's jobs on pool, as
// Source does the default queue's: at most pool's bound of them at once
// in this process. Make one a queue the process serves, each on its own
// pool, or several on one pool, where each takes the room the others
// leave (faster, with no bound a queue keeps); a queue is served from
// when the Source runs to when it stops, so
// a process adds or removes one while it runs. It makes the queue, with
// no limit, if it does not exist yet. Its journal, with
// Config.Journal set, is that path with "-<queue>" added.
func (r *Runner) QueueSource(ctx context.Context, q string, pool *crew.Pool, opts ...natsjs.Option) (*natsjs.Source, error) {
	cons, err := r.servedCons(ctx, q)
	if err != nil {
		return nil, err
	}
	journal := r.journal
	if journal != "" && q != jobs.DefaultQueue {
		journal += "-" + q
	}
	return r.source(ctx, q, pool, cons, journal, opts)
}

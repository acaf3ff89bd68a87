package jsjobs

import (
	"github.com/crew-go/crew"

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

// Source makes the natsjs.Source that runs the jobs on pool: TracedHandle
// on the consumer, each ack confirmed by the server (so that a finished
// job is not run again after a crash), tasks named "job", and the
// journal of Config.Journal if set; opts come after those and may
// override them. Its Run pulls until its context ends.
func (r *Runner) Source(pool *crew.Pool, opts ...natsjs.Option) (*natsjs.Source, error) {
	base := []natsjs.Option{natsjs.WithDoubleAck(), natsjs.WithTaskName("job")}
	if r.journal != "" {
		base = append(base, natsjs.WithConn(r.js.Conn()), natsjs.WithJournal(r.journal))
	}
	return natsjs.New(pool, r.store.cons, r.TracedHandle(), append(base, opts...)...)
}

// TracedHandle is Handle inside a consumer span, a child of the request
// that accepted the job.
func (r *Runner) TracedHandle() natsjs.Handler {
	return natsotel.Handler(r.Handle)
}

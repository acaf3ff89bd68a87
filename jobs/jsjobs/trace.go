package jsjobs

import (
	"context"
	"strconv"
	"time"

	"github.com/crew-go/crew"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natsotel"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A job's trace, through OpenTelemetry's global TracerProvider and
// propagator (no-ops unless the program sets them): the caller's span (an
// HTTP request's, say) is the parent of the publish (natsotel), whose W3C
// context travels in the message's headers; each run (TracedHandle) is a
// child of the publish on whichever process pulls the job, with its id,
// kind, attempt and outcome, and linked to the job's previous run when it
// runs again (runTrace).

// publish publishes a job's message inside a producer span, its trace
// context in the headers, its id as the message id; a Retry's message
// names the revision of the record it retries (retryOf), and has a
// message id of its own. dup says the stream already held a message of
// that id, so this one was not stored again.
func (r *Runner) publish(ctx context.Context, id string, job jobs.Prepared, retryOf uint64, retries int) (dup bool, err error) {
	msg := &nats.Msg{Subject: r.layout.job(id), Data: job.Body, Header: nats.Header{}}
	msgID := id
	if retryOf != 0 {
		msgID = id + ".retry." + strconv.FormatUint(retryOf, 10)
		msg.Header.Set(headerRetryOf, strconv.FormatUint(retryOf, 10))
		msg.Header.Set(headerRetries, strconv.Itoa(retries))
	}
	if !job.RunAt.IsZero() {
		// The server publishes it to <stream>.<id> when it is due; until
		// then it waits under <stream>-at.<id>, which no consumer reads.
		// The message it publishes then is stamped with that time, and
		// carries the headers, so the job's own time travels in one.
		msg.Header.Set(headerCreated, time.Now().UTC().Format(time.RFC3339Nano))
		msg.Subject = r.layout.due(id)
		msg.Header.Set(headerSchedule, "@at "+job.RunAt.UTC().Format(time.RFC3339Nano))
		msg.Header.Set(headerScheduleTarget, r.layout.job(id))
	}
	ack, err := natsotel.Publish(ctx, r.js, msg, jetstream.WithMsgID(msgID))
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}

// created is when the job of a message with headers h, stored at t, was
// accepted: t, unless the server published it at its due time.
func created(h nats.Header, t time.Time) time.Time {
	if c, err := time.Parse(time.RFC3339Nano, h.Get(headerCreated)); err == nil {
		return c
	}
	return t
}

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
	return natsjs.New(pool, r.cons, r.TracedHandle(), append(base, opts...)...)
}

// TracedHandle is Handle inside a consumer span, a child of the request
// that accepted the job.
func (r *Runner) TracedHandle() natsjs.Handler {
	return natsotel.Handler(r.Handle)
}

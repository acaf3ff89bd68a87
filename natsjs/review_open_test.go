//go:build review

package natsjs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs"
)

// TestReviewDeadLetterFailureAtServerLastDelivery: the consumer's MaxDeliver
// is 2; the dead-letter stream is out when the message's last delivery
// fails, and back a moment later. The README promises "if the publish
// fails, nak instead: never termed without its copy"; but a nak at the
// server's last delivery is never redelivered, so the message must still end
// in the dead-letter stream (or come back), not vanish.
func TestReviewDeadLetterFailureAtServerLastDelivery(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 2*time.Second, 2)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 1)
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		return errors.New("always fails")
	}, natsjs.WithBackoff(10*time.Millisecond, 10*time.Millisecond),
		natsjs.WithDeadLetter(e.js, "dead.jobs"))
	run(t, src)
	eventually(t, 10*time.Second, "the last delivery's failure", func() bool { return src.Stats().Naked >= 2 })
	e.stream(t, "dead", "dead.>") // the dead-letter stream is back
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		if streamMsgs(t, e.js, "dead") == 1 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	info := consumerInfo(t, cons)
	t.Fatalf("message lost: no dead letter 8 s after the dead-letter stream came back; stats %v; consumer ack pending %d, redelivered %d, pending %d",
		src.Stats(), info.NumAckPending, info.NumRedelivered, info.NumPending)
}

// TestReviewShutdownFromItsOwnHandler: a handler that calls Shutdown on its
// own Source with its context waits for itself: the handler's context never
// ends (its lease is renewed), so Shutdown, the pool's slot and Run are
// stuck. The pool's own Shutdown detects the case (ErrCalledFromTask).
func TestReviewShutdownFromItsOwnHandler(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 2*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 2)
	var src *natsjs.Source
	res := make(chan error, 1)
	src = newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		// A bound of our own so that the test ends: 6 s, 3 AckWaits.
		c, cancel := context.WithTimeout(ctx, 6*time.Second)
		defer cancel()
		start := time.Now()
		err := src.Shutdown(c)
		if time.Since(start) > 5*time.Second {
			res <- errors.New("Shutdown called from the handler blocked until its caller's deadline: " + err.Error())
		} else {
			res <- nil
		}
		return nil
	})
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	if err := <-res; err != nil {
		t.Error(err)
	}
	select {
	case <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

package natsjs

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A held message is in one of these states. The worker that starts it and
// Shutdown, which hands back what has not started, both move it out of
// waiting with a compare-and-swap, so exactly one of them wins: a message is
// never both run and handed back.
const (
	waiting    uint32 = iota // received, not started
	started                  // a worker runs the handler
	handedBack               // naked without delay by a stop; the task skips it
)

// Msg is a delivered message as a Handler sees it. Its methods are safe for
// concurrent use; the handler must not ack, nak or term it through Raw (the
// Source does, from the handler's return).
type Msg struct {
	raw     jetstream.Msg
	attempt int
	seq     uint64
	src     *Source

	state atomic.Uint32

	// Guarded by src.mu: the list of held messages and the lease.
	prev, next *Msg
	received   time.Time // delivery
	leased     time.Time // last delivery or renewal
	lost       bool      // the lease could not be renewed for a whole AckWait

	ctx     atomic.Pointer[msgContext] // the handler's, once started
	task    atomic.Pointer[crew.Task]  // its pool task, once submitted
	runs    atomic.Int32               // handler calls on this delivery
	resting atomic.Bool                // waiting out an outage's delay, not yet submitted again (settle.go)
	again   *time.Timer                // the end of that rest; guarded by src.mu
}

// Data returns the payload.
func (m *Msg) Data() []byte { return m.raw.Data() }

// Subject returns the subject the message was published to.
func (m *Msg) Subject() string { return m.raw.Subject() }

// Header returns the message's headers (nil when it has none).
func (m *Msg) Header() nats.Header { return m.raw.Headers() }

// Attempt returns the delivery count: 1 on the first delivery.
func (m *Msg) Attempt() int { return m.attempt }

// Runs returns how many times the handler was called with this delivery,
// this call included: 1, or more once outages (Unavailable) had it run
// again on the same delivery, an attempt not spent.
func (m *Msg) Runs() int { return int(m.runs.Load()) }

// StreamSeq returns the message's sequence number in its stream, the same
// on every delivery: a natural key for an idempotent handler.
func (m *Msg) StreamSeq() uint64 { return m.seq }

// Raw returns the underlying jetstream.Msg, for its metadata and anything
// else; acking, naking or terming it is the Source's job.
func (m *Msg) Raw() jetstream.Msg { return m.raw }

// msgContext is the context a handler receives: the pool task's context,
// also ended by a lost lease. It makes its own channel only when the handler
// asks for Done, so that a handler that never looks costs no goroutine.
type msgContext struct {
	context.Context // the task's

	src *Source // answers sourceKey, so that Shutdown knows a handler's context
	off bool    // off the pool (what Then left, a dead letter published again): a stop that gives up ends it

	mu   sync.Mutex
	done chan struct{}
	err  error
	stop func() bool // stops the watch of the task's context
}

// sourceKey is the key under which a handler's context, and every context
// made from it, holds its Source.
type sourceKey struct{}

func (c *msgContext) Value(key any) any {
	if key == (sourceKey{}) {
		return c.src
	}
	return c.Context.Value(key)
}

func (c *msgContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		} else {
			parent := c.Context
			c.stop = context.AfterFunc(parent, func() { c.cancelWith(parent.Err()) })
		}
	}
	return c.done
}

func (c *msgContext) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.Context.Err()
}

// cancelWith ends the context with err; the first cause wins and only it
// reports true.
func (c *msgContext) cancelWith(err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	return true
}

// cause returns the error the context was ended with by cancelWith, or nil.
func (c *msgContext) cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// release stops the watch of the task's context once the handler returned,
// and ends the context as the task's own ends with the task: a goroutine
// the handler left waiting on Done wakes, and Err is never non-nil while
// Done is open. A cause set before (ErrLeaseLost) stays.
func (c *msgContext) release() {
	c.mu.Lock()
	stop := c.stop
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	c.cancelWith(context.Canceled)
}

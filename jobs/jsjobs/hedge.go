package jsjobs

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// A read any replica answers (a direct get) goes to one of the stream's
// replicas picked at random by the servers: a client's server does not
// prefer its own replica. A replica whose server is cut off the network
// stays picked until its route is found dead (two missed pings: seconds),
// and a request it is sent is never answered. hedged therefore sends the
// read again while none has answered, each time to a replica picked anew,
// and takes the first answer: with one replica of three cut off, a read
// is unanswered after a second only when each of its tries went to that
// one, (1/3)^10 with the store answering as fast as usual.
//
// A try is sent again after twice the time the latest answers took (their
// 90th percentile), at least hedgeFloor and at most hedgeCeiling: a store
// answering in milliseconds has a lost read sent again after 100 ms, and a
// store slow for its load (answers taking 300 ms) is not sent every read
// ten times over, which would slow it further.

// hedgeFloor and hedgeCeiling bound the wait before a read is sent again,
// and hedgeTries how often it is sent at most.
const (
	hedgeFloor   = 100 * time.Millisecond
	hedgeCeiling = 500 * time.Millisecond
	hedgeTries   = 10
)

// hedger keeps how long the latest answered reads took, for the wait
// before a read is sent again.
type hedger struct {
	mu   sync.Mutex
	took [64]time.Duration // a ring of the latest answers' times
	n    int               // answers kept so far
}

// observe keeps an answer's time.
func (h *hedger) observe(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.took[h.n%len(h.took)] = d
	h.n++
}

// wait is how long a read waits for its answer before it is sent again.
func (h *hedger) wait() time.Duration {
	h.mu.Lock()
	ring, n := h.took, min(h.n, len(h.took)) // a copy: no allocation a read
	h.mu.Unlock()
	if n == 0 {
		return hedgeFloor
	}
	kept := ring[:n]
	slices.Sort(kept)
	return min(max(2*kept[n*9/10], hedgeFloor), hedgeCeiling)
}

// hedged runs try, and again every h.wait() while no try has answered (at
// most hedgeTries in all), until one answers with anything but a timeout,
// or every try has timed out (ctx's deadline: each try has all of ctx's
// time). It returns the first answer, and returns only once every try it
// began has ended.
func hedged[T any](ctx context.Context, h *hedger, try func(context.Context) (T, error)) (T, error) {
	type answer struct {
		v    T
		err  error
		took time.Duration
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before wg.Wait: the tries left end at once
	answers := make(chan answer, hedgeTries)
	began, pending := 0, 0
	begin := func() {
		began++
		pending++
		wg.Go(func() {
			start := time.Now()
			v, err := try(ctx)
			answers <- answer{v, err, time.Since(start)}
		})
	}
	begin()
	again := time.NewTimer(h.wait())
	defer again.Stop()
	for {
		select {
		case a := <-answers:
			pending--
			if !timedOut(a.err) {
				h.observe(a.took)
				return a.v, a.err
			}
			if pending == 0 && (began == hedgeTries || ctx.Err() != nil) {
				return a.v, a.err
			}
			if pending == 0 {
				begin()
			}
		case <-again.C:
			if began < hedgeTries {
				begin()
				again.Reset(h.wait())
			}
		}
	}
}

// timedOut tells a read that got no answer in time.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

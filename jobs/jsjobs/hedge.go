package jsjobs

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
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
// one, (1/3)^10 with the store answering as fast as usual (hedgeFloor
// apart).
//
// A try is sent again after twice the time the latest answers took (their
// 90th percentile), at least hedgeFloor and at most hedgeCeiling: a store
// answering in milliseconds has a lost read sent again after 100 ms, and a
// store slow for its load (answers taking 300 ms) is not sent every read
// ten times over, which would slow it further.
//
// A store is suspect for hedgeSuspect once a read was answered by a try
// sent again while an earlier one was out, and that earlier try was still
// unanswered hedgeGrace later: while it is, each read is sent
// hedgeSuspectTries times at once, and again so after each wait. A
// replica cut off stays picked for seconds, and a Get makes several reads
// in a row (a queued job's: its record, then its message): sent once, each
// would wait whenever its try went there. With one server of three
// frozen under load, more tries go unanswered than the third that went to
// it: the replicas left, which replicate to the frozen one, answer late
// too. Sent four times at once, a read waits for a second round only when
// all four went unanswered, and gives up only when all hedgeTries did.
//
// Why the earlier try is waited for: a store busy for its load (its
// servers short of CPU) also has reads answered by their second try first,
// many at once when the servers stall together, but their first tries
// answer a moment later; a replica cut off never answers. Were the second
// try's answer enough, a busy store would stay suspect as long as its load
// lasts, each read four requests and a Get six reads, which keep it
// busier. So the tries a read sent before its answer are left out, after
// it returns, for hedgeGrace more, never past the read's deadline.

// hedgeFloor and hedgeCeiling bound the wait before a read is sent again,
// and hedgeTries how often it is sent at most; hedgeGrace is how long the
// earlier tries of a read answered by a later one are waited for, and a
// store is suspect for hedgeSuspect, its reads sent hedgeSuspectTries
// times at once.
const (
	hedgeFloor   = 100 * time.Millisecond
	hedgeCeiling = 500 * time.Millisecond
	hedgeTries   = 20

	hedgeGrace        = 500 * time.Millisecond
	hedgeSuspect      = 10 * time.Second
	hedgeSuspectTries = 4
)

// hedger keeps how long the latest answered reads took, for the wait
// before a read is sent again.
type hedger struct {
	mu   sync.Mutex
	took [64]time.Duration // a ring of the latest answers' times
	n    int               // answers kept so far

	suspectUntil time.Time // until then, tries go hedgeSuspectTries at once
	once         bool      // a test's: each read sent once, never again (a test blocks a try to order a read)

	reads, tries atomic.Uint64 // reads made, and the tries they sent (the store's collector exports both)
}

// observe keeps an answer's time.
func (h *hedger) observe(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.took[h.n%len(h.took)] = d
	h.n++
}

// suspect makes the store suspect of a replica cut off, for hedgeSuspect.
func (h *hedger) suspect() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.suspectUntil = time.Now().Add(hedgeSuspect)
}

// first is how many tries a read sends at once.
func (h *hedger) first() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Now().Before(h.suspectUntil) {
		return hedgeSuspectTries
	}
	return 1
}

// suspected tells whether reads are sent several times at once.
func (h *hedger) suspected() bool { return h.first() > 1 }

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

// hedged runs try (h.first() times at once), and again (as many) every
// h.wait() while no try has answered (at most hedgeTries in all), until
// one answers with anything but a timeout, or every try has timed out
// (ctx's deadline: each try has all of ctx's time), or ctx is canceled.
// It returns the first answer. The tries end when it returns, but those sent
// before the one that answered: they are left hedgeGrace more (at most
// until ctx's deadline, whatever ctx's cancel), and one of them still
// unanswered then makes the store suspect.
func hedged[T any](ctx context.Context, h *hedger, try func(context.Context) (T, error)) (T, error) {
	type answer struct {
		v     T
		err   error
		took  time.Duration
		round int // how many times the read had been sent again when this try began
	}
	tctx, cancel := detached(ctx)
	var wg sync.WaitGroup
	ended := func() { cancel(); wg.Wait() }
	answers := make(chan answer, hedgeTries)
	began, round, pending := 0, 0, 0
	h.reads.Add(1)
	defer func() { h.tries.Add(uint64(began)) }()
	var out [hedgeTries]int // tries out, by round
	begin := func() {
		began++
		pending++
		out[round]++
		r := round
		wg.Go(func() {
			start := time.Now()
			v, err := try(tctx)
			answers <- answer{v, err, time.Since(start), r}
		})
	}
	for range h.first() {
		begin()
	}
	again := time.NewTimer(h.wait())
	defer again.Stop()
	if h.once {
		again.Stop()
	}
	done := ctx.Done()
	for {
		select {
		case a := <-answers:
			pending--
			out[a.round]--
			if !timedOut(a.err) {
				h.observe(a.took)
				earlier := 0
				for _, n := range out[:a.round] {
					earlier += n
				}
				if earlier == 0 {
					ended()
					return a.v, a.err
				}
				// Its earlier tries out: waited for in the background.
				go func() {
					defer ended()
					grace := time.NewTimer(hedgeGrace)
					defer grace.Stop()
					for earlier > 0 {
						select {
						case b := <-answers:
							if b.round < a.round && timedOut(b.err) {
								h.suspect() // out until the read's deadline
								return
							}
							if b.round < a.round {
								earlier--
							}
						case <-grace.C:
							h.suspect()
							return
						}
					}
				}()
				return a.v, a.err
			}
			if pending == 0 && (began == hedgeTries || tctx.Err() != nil) {
				ended()
				return a.v, a.err
			}
			if pending == 0 {
				begin()
			}
		case <-again.C:
			round++
			for range min(h.first(), hedgeTries-began) {
				begin()
			}
			if began < hedgeTries {
				again.Reset(h.wait())
			}
		case <-done:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				done = nil // the tries have the same deadline: they end with it
				continue
			}
			ended() // canceled
			var zero T
			return zero, ctx.Err()
		}
	}
}

// detached is a context for a read's tries: ctx's values and deadline,
// not its cancel (a caller cancels its context as the read returns, and
// the tries sent before the answer are waited for a moment more: hedged).
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if d, ok := ctx.Deadline(); ok {
		var stop context.CancelFunc
		tctx, stop = context.WithDeadline(tctx, d)
		return tctx, func() { stop(); cancel() }
	}
	return tctx, cancel
}

// timedOut tells a read that got no answer in time.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

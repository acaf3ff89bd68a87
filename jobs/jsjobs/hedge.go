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
// A store is suspect for hedgeSuspect once hedgeSuspectWhen of its latest
// hedgeSuspectOf reads were each answered by a try sent again while an
// earlier one was still out: while it is, each read is sent
// hedgeSuspectTries times at once, and again so after each wait. A
// replica cut off stays picked for seconds, and a Get makes several reads
// in a row (a queued job's: its record, then its message): sent once, each
// would wait whenever its try went there. With one server of three
// frozen under load, more tries go unanswered than the third that went to
// it: the replicas left, which replicate to the frozen one, answer late
// too. Sent four times at once, a read waits for a second round only when
// all four went unanswered, and gives up only when all hedgeTries did.
//
// Why a share of the reads, not one: a store busy for its load (its
// servers short of CPU) also has a read now and then answered by its
// second try first, the replica it went to a little busier than the next.
// Were one such read enough, a busy store would stay suspect as long as
// its load lasts, each read four requests and a Get six reads, which keep
// it busier. Only a read slower than twice
// the latest reads' 90th percentile is sent again, so a busy store's share
// stays well under a tenth, whereas a replica cut off of three leaves a
// third of the reads to be sent again, or more.

// hedgeFloor and hedgeCeiling bound the wait before a read is sent again,
// and hedgeTries how often it is sent at most; the rest say when a store
// is suspect, for how long, and how many tries a read then sends at once.
const (
	hedgeFloor   = 100 * time.Millisecond
	hedgeCeiling = 500 * time.Millisecond
	hedgeTries   = 20

	hedgeSuspect      = 10 * time.Second
	hedgeSuspectTries = 4
	hedgeSuspectOf    = 32
	hedgeSuspectWhen  = 8
)

// hedger keeps how long the latest answered reads took, for the wait
// before a read is sent again.
type hedger struct {
	mu   sync.Mutex
	took [64]time.Duration // a ring of the latest answers' times
	n    int               // answers kept so far

	suspectUntil time.Time            // until then, tries go hedgeSuspectTries at once
	resent       [hedgeSuspectOf]bool // of the latest reads answered, those answered past an earlier try still out
	answered     int                  // reads answered so far
	resentN      int                  // trues in resent

	reads, tries atomic.Uint64 // reads made, and the tries they sent (the store's collector exports both)
}

// observe keeps an answer's time.
func (h *hedger) observe(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.took[h.n%len(h.took)] = d
	h.n++
}

// answeredPast keeps whether a read was answered by a try sent again
// while an earlier one was still out, and makes the store suspect when
// hedgeSuspectWhen of the latest hedgeSuspectOf were.
func (h *hedger) answeredPast(past bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := h.answered % len(h.resent)
	if h.resent[i] {
		h.resentN--
	}
	if h.resent[i] = past; past {
		h.resentN++
	}
	h.answered++
	if past && h.resentN >= hedgeSuspectWhen {
		h.suspectUntil = time.Now().Add(hedgeSuspect)
	}
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
// h.wait() while no try has answered (at most hedgeTries in all), until one answers
// with anything but a timeout, or every try has timed out (ctx's deadline:
// each try has all of ctx's time). It returns the first answer, and
// returns only once every try it began has ended. It keeps whether the
// answer came from a try sent again while an earlier one was still out
// (answeredPast).
func hedged[T any](ctx context.Context, h *hedger, try func(context.Context) (T, error)) (T, error) {
	type answer struct {
		v     T
		err   error
		took  time.Duration
		round int // how many times the read had been sent again when this try began
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before wg.Wait: the tries left end at once
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
			v, err := try(ctx)
			answers <- answer{v, err, time.Since(start), r}
		})
	}
	for range h.first() {
		begin()
	}
	again := time.NewTimer(h.wait())
	defer again.Stop()
	for {
		select {
		case a := <-answers:
			pending--
			out[a.round]--
			if !timedOut(a.err) {
				h.observe(a.took)
				h.answeredPast(slices.ContainsFunc(out[:a.round], func(n int) bool { return n > 0 }))
				return a.v, a.err
			}
			if pending == 0 && (began == hedgeTries || ctx.Err() != nil) {
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
		}
	}
}

// timedOut tells a read that got no answer in time.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

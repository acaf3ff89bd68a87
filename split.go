package crew

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// split runs one Map or ForEach over a slice, data-parallel: the indexes
// 0..n-1 are claimed in chunks by a few participants, instead of one queued
// task per element. This is the work-splitting of OpenMP's guided schedule
// and Java's helping joins, within the pool's bound:
//
//   - The caller helps. If it can borrow a slot (workerSet's rule 6), it
//     queues its runners and then claims chunks itself, instead of parking
//     until they are done. A batch done before a runner starts has cost the
//     caller a few pushes, not a hand-off per element; when the pool is
//     paused or every slot is busy it only queues the runners and waits.
//   - Runners are tasks of the call's group, queued without waiting: one per
//     slot the pool and the group's Limit leave after the caller, and no
//     more than the elements. Each claims chunks until none is left. A
//     runner that starts after the work is done does nothing.
//   - Chunks shrink as the work runs out (guided: the rest divided by twice
//     the participants, at least one), so that a slow element near the end
//     does not leave the others idle, while a claim (one CAS on a shared
//     line) is amortised over many elements at the start. With no more
//     elements than participants each claims one at a time, so elements
//     that wait for one another still meet, as tasks at the bound do.
//   - Invariant 2 holds: every participant, the caller included, holds one
//     of the pool's slots while it runs elements, and there are at most
//     min(bound, Limit) of them.
//
// Every participant checks, before each element, the group's context (the
// first error without JoinErrors, the parent context, a hard stop) and the
// pool's stopping level (a soft stop runs no new element): what one queued
// task per element gave, and the reason the ordering of results and errors
// is unchanged. The caller returns once every participant that joined has
// left; runners still queued then find the work done and end at once.
type split struct {
	g      Group // the call's, in the same allocation
	p      *Pool
	n      int64
	body   func(ctx context.Context, i int) error
	shares int64       // participants, caller included: the guided divisor
	stop   atomic.Bool // a participant stopped with elements left unrun

	// The caller waits for the runners still inside when it is done, on a
	// channel made only then: the last runner out closes it.
	mu   sync.Mutex
	out  bool // the last participant has left
	done chan struct{}

	_    [64]byte
	next atomic.Int64 // the first unclaimed index
	_    [56]byte
	live atomic.Int64 // participants inside, and liveClosed once no one may join
	_    [56]byte
}

const liveClosed = 1 << 62

// runSplit is Map and ForEach: it calls body for every index below n, on
// pool, as described on split, and returns what the group's Wait would.
func runSplit(ctx context.Context, pool *Pool, n int, body func(context.Context, int) error, opts []GroupOption) error {
	s := &split{n: int64(n), body: body, shares: 1}
	g := &s.g
	g.init(ctx, pool, opts)
	if g.cfgErr != nil {
		return g.cfgErr
	}
	if n == 0 {
		return g.end(false)
	}
	p := g.pool
	if p.level.Load() != levelOpen {
		p.counts.refused.Add(1)
		g.end(false)
		return ErrClosed
	}
	if ctx.Err() != nil {
		return g.end(true)
	}
	s.p, g.parts = p, s
	if p.paused.Load() {
		return s.delegate()
	}
	lent, ok := p.workers.borrow(g)
	if !ok {
		return s.delegate()
	}
	s.help(lent)
	s.waitRunners()
	return g.inOrder(g.end(false))
}

// help runs the call with the caller as its first participant, on the slot
// it borrowed. Not inlined: calledFromTask finds the helping caller by this
// frame and its receiver.
//
//go:noinline
func (s *split) help(lent *worker) {
	p := s.p
	p.helped.Add(1) // the caller's share is a task of the pool
	s.live.Store(1)
	var obs time.Duration
	if p.cfg.observer != nil {
		obs = time.Since(p.epoch)
	}
	// If an element calls runtime.Goexit, the caller's goroutine ends here:
	// its share counts as failed, the elements left are abandoned (a runner
	// still inside finishes its chunk), and the slot goes back.
	state, returned := Failed, false
	// Deferred apart, and so run last: the slot goes back even if the
	// observer, below, calls runtime.Goexit.
	defer p.workers.giveBack(&s.g, lent)
	defer func() {
		if !returned {
			s.abandon()
		}
		s.leave()
		p.counts.count(state)
		if p.cfg.observer != nil {
			p.observe(Observation{Name: s.g.name, Run: time.Since(p.epoch) - obs, State: state})
		}
	}()
	if s.n > 1 {
		s.recruit()
	}
	state = s.work()
	returned = true
}

// delegate runs the call on runners only, when the caller may not help
// (the pool is paused or every slot is taken): it queues as many as the
// bound and the Limit allow, waiting for room, and waits for them as Wait
// does.
func (s *split) delegate() error {
	g := &s.g
	s.shares = s.participants()
	for range s.shares {
		if err := g.submit(nil, nil, true); err != nil {
			g.record(err)
			break
		}
	}
	return g.inOrder(g.Wait())
}

// recruit queues one runner per slot the pool and the group's Limit leave
// after the caller, and no more than there are elements besides the
// caller's first, without waiting for room: a full queue means fewer
// helpers, never a caller blocked while it holds a slot.
func (s *split) recruit() {
	p, g := s.p, &s.g
	s.shares = s.participants()
	for range s.shares - 1 {
		g.pending.Add(1)
		it := item{g: g, name: g.name} // no function: a runner (Group.run)
		if p.level.Load() != levelOpen || p.offer(&it) != pushed {
			g.pending.Add(-1)
			return
		}
	}
}

// participants is how many may work on the call at once, the caller
// included: the pool's bound and the group's Limit, and no more than the
// elements.
func (s *split) participants() int64 {
	k := min(s.p.workers.max.Load(), s.n)
	if s.g.limit > 0 {
		k = min(k, s.g.limit)
	}
	return k
}

// runner is the function of a runner task: join, work, leave. An element
// that calls runtime.Goexit ends the runner's worker (which fails the task
// with ErrGoexit): the elements left are then abandoned, never lost.
func (s *split) runner() (err error) {
	if !s.join() {
		return nil
	}
	returned := false
	defer func() {
		if !returned {
			s.abandon()
		}
		s.leave()
	}()
	switch s.work() {
	case Failed:
		err = errPartFailed
	case Panicked:
		err = errPartPanicked
	}
	returned = true
	return err
}

// work claims chunks and runs them until none is left or the call stops.
func (s *split) work() State {
	state := Succeeded
	for {
		lo, hi, ok := s.claim()
		if !ok {
			return state
		}
		st, ok := s.span(lo, hi)
		state = worse(state, st)
		if !ok {
			return state
		}
	}
}

// claim takes the next chunk: the rest divided by twice the participants,
// at least one element.
func (s *split) claim() (lo, hi int64, ok bool) {
	for {
		lo = s.next.Load()
		rest := s.n - lo
		if rest <= 0 {
			return 0, 0, false
		}
		c := max(1, rest/(2*s.shares))
		if s.next.CompareAndSwap(lo, lo+c) {
			return lo, lo + c, true
		}
	}
}

// span runs the elements lo..hi-1. It returns false if the call stopped
// before the end: the rest of the work is then abandoned by everyone.
func (s *split) span(lo, hi int64) (State, bool) {
	g, p := &s.g, s.p
	state := Succeeded
	for i := lo; i < hi; i++ {
		stopped, err := s.calls(&i, hi)
		if stopped {
			s.abandon()
			return state, false
		}
		if err != nil { // element i failed: record it and go on after it
			if pe := elementPanic(err, g.name); pe != nil {
				p.panicked(pe)
				state = Panicked
			} else {
				state = worse(state, Failed)
			}
			g.record(err)
		}
	}
	return state, true
}

// calls runs the elements from *i up to hi, checking before each the
// group's context (the first error without JoinErrors, the parent
// context, a hard stop) and the pool's stopping level (a soft stop runs no
// new element). It returns at the first element that fails or panics,
// with *i on it and its error as an *IndexError; stopped if a check said
// stop; else with *i at hi. One deferred recover serves the whole run of
// elements, not one per element.
func (s *split) calls(i *int64, hi int64) (stopped bool, err error) {
	defer atIndexOf(i, &err)
	g, p := &s.g, s.p
	for ; *i < hi; *i++ {
		if g.ctx.Err() != nil || p.level.Load() >= levelSoft {
			return true, nil
		}
		if err = s.body(g.ctx, int(*i)); err != nil {
			return false, err
		}
	}
	return false, nil
}

// abandon records why the elements left will not run: the cause of the
// group's cancellation, or ErrNotRun for a stopping pool.
func (s *split) abandon() {
	s.next.Store(s.n)
	if s.stop.Swap(true) {
		return
	}
	if s.g.ctx.Err() != nil {
		s.g.record(context.Cause(s.g.ctx))
	} else {
		s.g.record(ErrNotRun)
	}
}

// join admits a runner unless the work is over.
func (s *split) join() bool {
	for {
		v := s.live.Load()
		if v&liveClosed != 0 || s.next.Load() >= s.n {
			return false
		}
		if s.live.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// leave is a participant's last step: once no index is left to claim, the
// first to leave closes the door, and the last one out tells the caller.
func (s *split) leave() {
	if s.next.Load() >= s.n {
		s.live.Or(liveClosed)
	}
	if s.live.Add(-1) == liveClosed {
		s.mu.Lock()
		s.out = true
		if s.done != nil {
			close(s.done)
		}
		s.mu.Unlock()
	}
}

// waitRunners waits, once the caller has left, for the runners still
// inside.
func (s *split) waitRunners() {
	s.mu.Lock()
	if s.out {
		s.mu.Unlock()
		return
	}
	s.done = make(chan struct{})
	s.mu.Unlock()
	<-s.done
}

// finished reports whether every index has been claimed: a runner queued
// for a finished call has nothing to do and is no failure.
func (s *split) finished() bool { return s.next.Load() >= s.n && !s.stop.Load() }

// worse is the state a participant reports for its elements: Panicked over
// Failed over Succeeded.
func worse(a, b State) State {
	if a == Panicked || b == Panicked {
		return Panicked
	}
	if a == Failed || b == Failed {
		return Failed
	}
	return Succeeded
}

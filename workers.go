package crew

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// workerSet is the pool's workers: how many live (ctl) under which bound
// (max), which are looking for work (spinning) or parked on the idle stack,
// and the one reaper timer that retires those idle for too long. It owns the
// rules that keep every queued task seen by a worker. They are the whole of
// the scheduler; each names the code that keeps it.
//
//  1. Slots. A worker holds one of at most max slots in ctl from its start to
//     its exit; a helping caller holds one from borrow to giveBack (rule 6).
//     A slot is taken only by a CAS below max (takeSlot: spawn, reclaim,
//     borrow) and given up by exactly one decrement (giveUpSlot: a retired
//     worker in park, retireSurplus, a stopping worker in take, goexit,
//     giveBack). Hence at most max task functions run at once (invariant 2).
//  2. Notify after push. Whoever makes a task runnable (a push, Resume,
//     Resize, a stop) then calls notify or kick: unless the pool is paused
//     or a looker is counted (rule 3), it wakes a parked worker, else starts
//     one if a slot is free, else every slot is taken by a worker that will
//     look at the queue before it parks or retires (rules 4 and 5). The
//     worker so recruited covers that one push and owes nothing more;
//     except that a push overtaken by later ones (they took their slots
//     after it but were written before it: ring.push says so) recruits a
//     looker, since a looker that saw the head still being written may
//     have stopped with those later tasks behind it.
//  3. Lookers hand on. A looker is a worker counted in spinning: one
//     spinning before it parks, or one woken or started by another looker.
//     A push that sees a looker relies on it instead of recruiting, so a
//     looker that takes a task and sees another one ready calls notify as a
//     looker before it runs its own: each looker that finds work recruits
//     the next, as the Go scheduler's spinning threads do, until the queue
//     is empty or every slot runs a task: a hand-on that stopped after one
//     step would leave a burst on one or two workers. "Ready"
//     looks at the head again if a consumer moved it during the look, so a
//     plain worker's pop beside a looker's cannot hide the next task.
//  4. Publish, then look. A looker counts from the moment it spins, or its
//     waker counts it, until it holds a task or parks; a worker counts as
//     parked before its last look at the queue; notify reads those counts
//     after its push. Of the pusher and the worker, at least one sees the
//     other. A looker stops counting before it looks again (rule 3 after a
//     pop, rule 4 before it parks, rule 5 before it exits), so a push that
//     relied on it is never lost; and a worker whose look after it stopped
//     counting finds work takes that work as a looker again (startLooking),
//     whether it takes itself off the idle stack or a waker does, because
//     several pushes may have relied on it and only a looker hands on: a
//     plain worker would run the first task of a burst and leave the
//     others queued beside free slots.
//  5. Give up a slot, then look. A worker that gives up its slot (retired by
//     the reaper, or surplus after Resize) looks at the queue afterwards and
//     takes a slot back if there is work and room (reclaim), because a
//     pusher that found every slot taken started no one, and takes that
//     work as a looker; if there is work but no room, it recruits a parked
//     worker as a looker in its place.
//  6. A helping caller is a worker. The caller of Map or ForEach may run
//     elements itself on a slot it borrows: a free one, or a parked
//     worker's, taken off the idle stack (borrow). It never looks at the
//     queue meanwhile, so when it gives the slot back (giveBack) it looks,
//     as rule 5 does: it recruits a worker if a task is queued, and wakes
//     every parked worker if the pool began to stop or shrank.
//
// Together: every push recruits a worker, finds every slot taken, or
// relies on a looker counted when it looked; that looker's count ends with
// a look that sees the pushed task (or finds it taken, or finds an earlier
// slot still being written, whose push then recruits a looker), and a look
// that sees work leads a looker to a task, which hands on. So while the
// pool is open and not paused, a queued task is taken by a worker without
// waiting for another task to end, whenever fewer than max functions run
// (invariant 7). Checked at every quiescent point of the fuzz target, by
// TestRendezvousAtTheBound, and under real threads by TestWarmBursts at
// GOMAXPROCS 2, 4 and 8, whose windows -tags crewyield widens with a
// yieldpoint between the steps above.
type workerSet struct {
	p *Pool

	// Read on every submit and every pop, written rarely.
	_ [64]byte
	// ctl holds the number of live workers, and terminatedBit once the pool
	// has stopped for good and may start no worker again.
	ctl atomic.Uint64
	max atomic.Int64
	// maxSpinning is how many idle workers may spin at once, half the Ps
	// as in the Go scheduler; the others park at once (rule 4 holds for
	// both).
	maxSpinning int32

	// Written by workers each time they run out of work.
	_ [48]byte
	// spinning counts the lookers (rule 3): workers spinning before they
	// park, and workers woken or started by a looker, counted by their waker
	// until they hold a task.
	spinning atomic.Int32
	parked   atomic.Int32 // workers on the idle stack
	_        [56]byte

	// goroutines counts worker goroutines until their very last step, so
	// that the pool terminates only when none is left.
	goroutines atomic.Int64

	mu      sync.Mutex
	idle    []*worker // parked workers, most recent last, so oldest first
	reaper  *time.Timer
	reaping bool // the reaper is armed or running
	all     map[*worker]struct{}
	helpers []*Group // groups whose caller runs elements on a borrowed slot
	exited  counters // counts of workers that have exited
}

const terminatedBit = 1 << 62

func (ws *workerSet) init(p *Pool, max int) {
	ws.p = p
	ws.max.Store(int64(max))
	ws.maxSpinning = int32(runtime.GOMAXPROCS(0) / 2)
	if ws.maxSpinning < 1 {
		ws.maxSpinning = 1
	}
	ws.all = make(map[*worker]struct{})
}

// alive is the number of live workers.
func (ws *workerSet) alive() int64 { return int64(ws.ctl.Load() &^ terminatedBit) }

// notify makes sure a worker will see a task just made runnable (rule 2);
// looker says whether the worker it recruits must hand on (rule 3).
func (ws *workerSet) notify(looker bool) {
	if ws.p.paused.Load() || ws.spinning.Load() > 0 {
		return
	}
	yieldpoint()
	if ws.parked.Load() > 0 && ws.wakeOne(looker) {
		return
	}
	ws.spawn(looker)
}

// kick starts or wakes as many workers as the queue can keep busy: after
// Resume, a Resize that grows, a stop, or a worker lost to Goexit.
func (ws *workerSet) kick() {
	p := ws.p
	if p.paused.Load() {
		return
	}
	for n := p.q.len(); n > 0; n-- {
		if !(ws.parked.Load() > 0 && ws.wakeOne(false)) && !ws.spawn(false) {
			return
		}
	}
}

// wakeOne wakes the most recently parked worker, if any, as a looker or
// not.
func (ws *workerSet) wakeOne(looker bool) bool {
	ws.mu.Lock()
	n := len(ws.idle)
	if n == 0 {
		ws.mu.Unlock()
		return false
	}
	w := ws.idle[n-1]
	ws.idle[n-1] = nil
	ws.idle = ws.idle[:n-1]
	ws.parked.Add(-1)
	if looker {
		ws.spinning.Add(1) // on w's behalf, until it takes a task (rule 4)
	}
	w.asLooker = looker
	ws.mu.Unlock()
	yieldpoint()
	w.wake <- struct{}{}
	return true
}

// wakeAll wakes every parked worker, so that each looks again at the queue,
// the bound and the stopping level.
func (ws *workerSet) wakeAll() {
	ws.mu.Lock()
	idle := ws.idle
	ws.idle = nil
	ws.parked.Add(-int32(len(idle)))
	ws.mu.Unlock()
	for _, w := range idle {
		w.wake <- struct{}{}
	}
}

// spawn starts a worker, as a looker or not, if a slot is free and the
// pool has not terminated.
func (ws *workerSet) spawn(looker bool) bool {
	if !ws.takeSlot() {
		return false
	}
	yieldpoint()
	w := &worker{p: ws.p, wake: make(chan struct{}, 1), looking: looker}
	if looker {
		ws.spinning.Add(1) // on w's behalf, until it takes a task (rule 4)
	}
	ws.goroutines.Add(1)
	ws.mu.Lock()
	ws.all[w] = struct{}{}
	ws.mu.Unlock()
	go w.loop()
	return true
}

// takeSlot takes one of the max slots (rule 1).
func (ws *workerSet) takeSlot() bool {
	for {
		c := ws.ctl.Load()
		if c&terminatedBit != 0 || int64(c) >= ws.max.Load() {
			return false
		}
		if ws.ctl.CompareAndSwap(c, c+1) {
			return true
		}
	}
}

// giveUpSlot gives up the calling worker's slot (rule 1).
func (ws *workerSet) giveUpSlot() { ws.ctl.Add(^uint64(0)) }

// borrow takes a slot for a caller that helps with g's work (rule 6): a
// free one, or else the slot of a parked worker, which then stays off the
// idle stack, still parked, until giveBack puts it back. It reports false
// when every slot belongs to a worker that is running or looking.
func (ws *workerSet) borrow(g *Group) (lent *worker, ok bool) {
	free := ws.takeSlot()
	if !free && ws.parked.Load() == 0 {
		return nil, false
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !free {
		n := len(ws.idle)
		if n == 0 {
			return nil, false
		}
		lent = ws.idle[n-1]
		ws.idle[n-1] = nil
		ws.idle = ws.idle[:n-1]
		ws.parked.Add(-1)
	}
	ws.helpers = append(ws.helpers, g)
	return lent, true
}

// giveBack returns the slot borrow took, then looks at what the pool's
// workers would have looked at meanwhile (rule 6): a queued task, a stop,
// a bound lowered. A lent worker is parked again on its own behalf.
func (ws *workerSet) giveBack(g *Group, lent *worker) {
	p := ws.p
	ws.mu.Lock()
	if i := slices.Index(ws.helpers, g); i >= 0 {
		ws.helpers = slices.Delete(ws.helpers, i, i+1)
	}
	if lent != nil {
		lent.parkedAt = time.Since(p.epoch)
		ws.idle = append(ws.idle, lent)
		ws.parked.Add(1)
		if !ws.reaping {
			ws.armReaper(p.cfg.idleTimeout)
		}
	} else {
		ws.giveUpSlot()
	}
	ws.mu.Unlock()
	if p.q.len() > 0 {
		ws.notify(false)
	}
	if p.level.Load() != levelOpen || ws.alive() > ws.max.Load() {
		ws.wakeAll() // to stop, or to retire the surplus
		p.tryTerminate()
	}
}

// retireSurplus gives up a slot when the pool has more live workers than
// its bound, then reclaims one if work came meanwhile (rule 5). It reports
// whether the worker must exit.
func (ws *workerSet) retireSurplus() bool {
	for {
		c := ws.ctl.Load()
		if int64(c&^terminatedBit) <= ws.max.Load() {
			return false
		}
		if ws.ctl.CompareAndSwap(c, c-1) {
			yieldpoint()
			return !ws.reclaim()
		}
	}
}

// reclaim is called by a worker that has just given up its slot. A pusher
// that pushed just before may have found every slot taken and started no
// one, or relied on this worker spinning, so the worker looks at the queue
// once more and takes a slot back if there is work and room for it (rule
// 5); if there is work but no room, it passes the work on to a parked
// worker, which holds a slot.
func (ws *workerSet) reclaim() bool {
	p := ws.p
	if p.paused.Load() || p.q.len() == 0 {
		return false
	}
	if ws.takeSlot() {
		return true
	}
	ws.notify(true)
	return false
}

// park puts w on the idle stack. The caller then looks at the queue once
// more (rule 4) and, if there is work, takes itself off with unpark.
func (ws *workerSet) park(w *worker) {
	ws.mu.Lock()
	w.parkedAt = time.Since(ws.p.epoch)
	w.retired = false
	w.asLooker = false
	ws.idle = append(ws.idle, w)
	ws.parked.Add(1)
	if !ws.reaping {
		ws.armReaper(ws.p.cfg.idleTimeout)
	}
	ws.mu.Unlock()
}

// unpark takes w off the idle stack; false means a waker already did and a
// token is on its way.
func (ws *workerSet) unpark(w *worker) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for i := len(ws.idle) - 1; i >= 0; i-- {
		if ws.idle[i] == w {
			ws.idle = slices.Delete(ws.idle, i, i+1)
			ws.parked.Add(-1)
			return true
		}
	}
	return false
}

// armReaper makes the reaper run after d; ws.mu is held. One timer for the
// pool, not one per worker: parking costs no timer, and an idle pool's
// reaper disarms itself once the last worker is gone.
func (ws *workerSet) armReaper(d time.Duration) {
	ws.reaping = true
	if ws.reaper == nil {
		ws.reaper = time.AfterFunc(d, ws.reap)
	} else {
		ws.reaper.Reset(d)
	}
}

// reap retires the workers parked for the idle timeout or longer: the
// oldest are at the bottom of the idle stack. It then rearms for the next.
func (ws *workerSet) reap() {
	idleTimeout := ws.p.cfg.idleTimeout
	ws.mu.Lock()
	now := time.Since(ws.p.epoch)
	n := 0
	for n < len(ws.idle) && now-ws.idle[n].parkedAt >= idleTimeout {
		n++
	}
	retired := slices.Clone(ws.idle[:n])
	for _, w := range retired {
		w.retired = true
	}
	ws.idle = slices.Delete(ws.idle, 0, n)
	ws.parked.Add(-int32(n))
	if len(ws.idle) > 0 {
		ws.armReaper(ws.idle[0].parkedAt + idleTimeout - now)
	} else {
		ws.reaping = false
	}
	ws.mu.Unlock()
	for _, w := range retired {
		w.wake <- struct{}{}
	}
}

// stopReaper stops the reaper for good, once the pool has terminated.
func (ws *workerSet) stopReaper() {
	ws.mu.Lock()
	if ws.reaper != nil {
		ws.reaper.Stop()
		ws.reaping = false
	}
	ws.mu.Unlock()
}

// terminate marks the set terminated if no worker is live, so that none
// may start again. It reports whether the set is terminated.
func (ws *workerSet) terminate() bool {
	return ws.ctl.CompareAndSwap(0, terminatedBit) || ws.ctl.Load() == terminatedBit
}

// removed takes an exiting worker out of the set, keeping its counts. It
// reports whether it was the last worker goroutine.
func (ws *workerSet) removed(w *worker) bool {
	ws.mu.Lock()
	delete(ws.all, w)
	ws.exited.fold(&w.counts)
	ws.mu.Unlock()
	return ws.goroutines.Add(-1) == 0
}

// each calls f with every live worker, under the set's lock: for stops,
// stuck reports and a cancelled group's Wait, not for the hot path.
func (ws *workerSet) each(f func(*worker)) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.all {
		f(w)
	}
}

// addCounts adds every worker's counts to s and returns how many workers
// are parked.
func (ws *workerSet) addCounts(s *Stats) (parked int) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.exited.addTo(s)
	for w := range ws.all {
		w.counts.addTo(s)
	}
	return len(ws.idle)
}

// running counts the workers running a function of g; runs reports whether
// there is one. For a cancelled group's Wait, not for the hot path.
func (ws *workerSet) running(g *Group) int {
	n := 0
	ws.each(func(w *worker) {
		if w.group.Load() == g {
			n++
		}
	})
	return n
}

func (ws *workerSet) runs(g *Group) bool { return ws.running(g) > 0 }

package crew

import (
	"runtime"
	"sync/atomic"
	"time"
)

// spinRounds is how many times an idle worker yields and looks at the queue
// again before it parks: long enough to catch the next task of a busy
// stream without a wake-up, short enough to cost nothing when idle.
const spinRounds = 4

// runnerSpinRounds replaces spinRounds once: at the worker's first spin
// after it ran a runner of a Map or ForEach (split.go), whatever it took
// from the queue in between. Such calls come in series, a loop of
// them or one per request, and the next call's runner is then taken by a
// worker still looking, at once; a parked worker starts only once the
// runtime has woken an idle P's thread, which can take as long as a call
// over a thousand short elements.
const runnerSpinRounds = 64

// spinYield is how a spinning worker yields between two looks (a test
// counts them).
var spinYield = runtime.Gosched

// worker is one worker goroutine: it takes tasks from the queue and runs
// them, following the rules of workerSet.
type worker struct {
	p         *Pool
	wake      chan struct{} // one token per wake-up from the idle stack
	parkedAt  time.Duration // since the pool's epoch; guarded by workerSet.mu
	retired   bool          // set by the reaper before its token; guarded by workerSet.mu
	looking   bool          // counted in workerSet.spinning: a looker (rule 3)
	asLooker  bool          // woken as a looker; guarded by workerSet.mu
	mark      time.Duration // the observer's last clock reading, at a task's end
	fresh     bool          // the worker went straight on since mark
	ranRunner bool          // the last task was a runner of a Map or ForEach
	began     time.Duration // the running task's start, for the observer
	timer     *time.Timer   // the running task's timeout, reused
	fired     chan struct{} // the timeout callback has finished
	current   atomic.Pointer[Task]
	group     atomic.Pointer[Group] // the group whose function is running
	counts    counters
	unflushed uint64 // short tasks succeeded, not yet added to counts (flush)
	owed      bool   // the task being run has not reached its terminal state yet (goexit)
}

// flushEvery bounds how many succeeded short tasks a busy worker keeps to
// itself before adding them to its counters: one atomic add per batch
// instead of one per task, so Stats may lag a busy worker by that many.
const flushEvery = 64

// flush adds the short tasks counted locally to the worker's counters:
// before it looks for work with an empty queue, and before it exits.
func (w *worker) flush() {
	if w.unflushed > 0 {
		w.counts.succeeded.Add(w.unflushed)
		w.unflushed = 0
	}
}

func (w *worker) loop() {
	normal := false
	var it item // reused: take writes each task over the last
	defer func() {
		if !normal {
			w.goexit(&it)
		}
		w.exit()
	}()
	for {
		if !w.take(&it) {
			normal = true
			return
		}
		w.run(&it)
	}
}

// take takes the next task to run into *it, or returns false when the
// worker must exit, in which case it has already given up its slot.
func (w *worker) take(it *item) bool {
	p := w.p
	ws := &p.workers
	for {
		if ws.alive() > ws.max.Load() {
			w.stopLooking()
			if ws.retireSurplus() {
				return false
			}
		}
		if !p.paused.Load() && p.q.pop(it) {
			yieldpoint()
			if w.looking {
				w.stopLooking()
				yieldpoint()
				if p.q.ready() {
					ws.notify(true) // rule 3: hand on
				}
			}
			if p.submitters.count.Load() > 0 {
				p.submitters.wakeOne()
			}
			return true
		}
		if p.level.Load() != levelOpen && p.q.len() == 0 {
			w.stopLooking()
			ws.giveUpSlot()
			return false
		}
		w.fresh = false
		w.flush()
		*it = item{} // an idle worker must not keep its last task alive
		if w.spin() {
			continue
		}
		if !w.park() {
			return false
		}
	}
}

// startLooking counts the worker as a looker again: it found work on a
// look made after it stopped counting (rules 3, 4 and 5).
func (w *worker) startLooking() {
	if !w.looking {
		w.looking = true
		w.p.workers.spinning.Add(1)
	}
}

// stopLooking takes the worker out of the spinning count (rule 4).
func (w *worker) stopLooking() {
	if w.looking {
		w.looking = false
		w.p.workers.spinning.Add(-1)
	}
}

// hasWork reports whether an idle worker has something to look at.
func (w *worker) hasWork() bool {
	p := w.p
	return (!p.paused.Load() && p.q.ready()) || p.level.Load() != levelOpen || p.workers.alive() > p.workers.max.Load()
}

// spin looks at the queue a few times, yielding in between, counted as
// spinning (rule 4). It returns true, still counted, when there is
// something to look at.
func (w *worker) spin() bool {
	rounds := spinRounds
	if w.ranRunner {
		w.ranRunner = false
		rounds = runnerSpinRounds
	}
	ws := &w.p.workers
	if !w.looking {
		// Enough lookers already: more would only take the CPU from the
		// workers that run tasks, yielding to each other while the last
		// tasks of a burst wait for a turn.
		if ws.spinning.Load() >= ws.maxSpinning {
			return false
		}
		w.looking = true
		ws.spinning.Add(1)
	}
	for range rounds {
		if w.hasWork() {
			return true
		}
		spinYield()
	}
	yieldpoint()
	w.stopLooking()
	yieldpoint()
	return false
}

// park waits on the idle stack until the worker is woken, or retired by
// the reaper once it has been idle for the idle timeout. It returns false
// when the worker must exit.
func (w *worker) park() bool {
	ws := &w.p.workers
	ws.park(w)
	yieldpoint()
	// Rule 4: publish, then look. Work seen now may be that of pushes that
	// relied on us while we counted as a looker, so we take it as a looker
	// (rule 3), whether we take ourselves off the stack or a waker did.
	seen := w.hasWork()
	if seen && ws.unpark(w) {
		w.startLooking()
		return true
	}
	// Whoever took us off the stack sends a token, and counted us in
	// spinning if it woke us as a looker.
	<-w.wake
	w.looking = w.asLooker
	if !w.retired {
		if seen {
			w.startLooking()
		}
		return true
	}
	w.stopLooking()
	ws.giveUpSlot()
	yieldpoint()
	if !ws.reclaim() { // rule 5
		return false
	}
	w.startLooking()
	return true
}

func (w *worker) exit() {
	p := w.p
	w.flush()
	if w.timer != nil {
		w.timer.Stop()
	}
	if p.workers.removed(w) {
		p.tryTerminate()
	}
}

package jsjobs

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Dependencies (jobs.Spec.After). A job with parents is stored as a record
// in state waiting, with its spec, and no message: it is no backlog for
// any consumer. It is released without a write a dependency: every
// process's index already reads every record's end from the bucket's tail
// (tail.go), so the deps fed by the tails (of every partition, in a
// Partitioned store) keep each waiting job's count of parents left, and
// the parents each waiting job waits for, rebuilt from the records at the
// tails' start. When the count reaches 0 (or a parent ended without
// success, which cancels the job as jobs.Spec.CanceledBy says), each process
// settles the job (settleWaiting): the one whose write over the waiting
// revision lands decides, the others find the record changed. A release
// publishes the job's message as a Retry does, named by the waiting
// revision (so that the releases of several processes store one message),
// then writes the record queued. What a dependant costs: three writes more
// than a plain job (its waiting record, queued, and running before its run,
// as a retried job's), none a parent; a join of many parents is released
// by the tail's read of its last parent's end, without a scan.
//
// The tails run in every process that runs jobs or submits a waiting one
// (follow, from Source and Submit), every partition's, so a job is
// released while any of them runs; a release that fails (the store
// out) is tried again every settleRetry until the tail reads the job's
// record settled.

// settleRetry is how long a failed settle waits before it is tried again,
// and settleAtOnce how many settles are under way at once (each a few
// round trips to the store: a fan-out of 1,000 is released in parallel).
const (
	settleRetry  = time.Second
	settleAtOnce = 16
)

// deps are the waiting jobs this process's tails have read, and what each
// waits for.
type deps struct {
	// stateOf is a job's state in its partition's index, if it is there.
	stateOf func(jobKey) (jobs.State, bool)
	// settle writes a waiting job, its record still at revision seq,
	// queued (parent "") or canceled for its parent's end in state st;
	// nil: settled, or nothing left to do (its record changed: the tail
	// reads it again).
	settle func(ctx context.Context, id string, seq uint64, parent string, st jobs.State) error
	// tails starts the tails that feed it, every partition's.
	tails     func()
	following sync.Once

	mu      sync.Mutex
	waiting map[jobKey]*dependant
	waiters map[jobKey][]jobKey // a parent's waiting jobs
	todo    map[jobKey]decision // decided, to settle
	wake    chan struct{}
	started bool
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// dependant is a waiting job: its parents left, and how it ends.
type dependant struct {
	seq     uint64 // its waiting record's revision
	after   []string
	left    int
	rule    jobs.Spec // what a parent's failure does: its EvenOnFailure and Gate (CanceledBy)
	decided bool
}

// decision is how a waiting job, its record at revision seq, is to be
// settled: released (parent ""), or canceled for parent's end in state
// st.
type decision struct {
	seq    uint64
	parent string
	st     jobs.State
}

func newDeps(stateOf func(jobKey) (jobs.State, bool), settle func(ctx context.Context, id string, seq uint64, parent string, st jobs.State) error, tails func()) *deps {
	return &deps{stateOf: stateOf, settle: settle, tails: tails, waiting: map[jobKey]*dependant{}, waiters: map[jobKey][]jobKey{}, todo: map[jobKey]decision{}, wake: make(chan struct{}, 1)}
}

// follow starts the tails that feed d, once.
func (d *deps) follow() { d.following.Do(d.tails) }

// record is a record read by a tail: job k in state st at revision seq,
// with its parents and rule when it waits. A waiting record of a later
// revision than the one noted is the job waiting again (a Retry): the
// bucket keeps a key's latest revision only, so the tail may never read
// the end in between.
func (d *deps) record(k jobKey, seq uint64, st jobs.State, after []string, rule jobs.Spec) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if st == jobs.Waiting {
		if w, ok := d.waiting[k]; ok && w.seq < seq {
			d.forget(k)
		}
		d.add(k, seq, after, rule)
		return
	}
	// Settled (by this process or another), or canceled: forgotten.
	d.forget(k)
	if st.Terminal() {
		d.ended(k, st)
	}
}

// removed is a record deleted: a waiting job forgotten, and a parent's
// deletion told to its waiting jobs as a cancel (only an ended job is
// deleted, and the purge may hide its end from the tail).
func (d *deps) removed(k jobKey) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forget(k)
	d.ended(k, jobs.Canceled)
}

// forget drops waiting job k, and its place among its parents' waiting
// jobs: noted again (a Retry, a batch grown), it must count each parent
// once. d.mu held.
func (d *deps) forget(k jobKey) {
	w, ok := d.waiting[k]
	if !ok {
		return
	}
	for _, id := range w.after {
		p, ok := keyOf(id)
		if !ok {
			continue
		}
		if left := slices.DeleteFunc(d.waiters[p], func(c jobKey) bool { return c == k }); len(left) > 0 {
			d.waiters[p] = left
		} else {
			delete(d.waiters, p)
		}
	}
	delete(d.waiting, k)
	delete(d.todo, k)
}

// add notes waiting job k (its record at revision seq), each of its
// parents ended or not. d.mu held.
func (d *deps) add(k jobKey, seq uint64, after []string, rule jobs.Spec) {
	if _, ok := d.waiting[k]; ok {
		return
	}
	w := &dependant{seq: seq, after: after, rule: rule}
	d.waiting[k] = w
	for _, id := range after {
		p, ok := keyOf(id)
		if !ok {
			continue
		}
		if st, ok := d.stateOf(p); ok && st.Terminal() {
			if w.rule.CanceledBy(id, st) {
				d.decide(k, w, decision{parent: id, st: st})
			}
			continue // ended: not counted
		}
		w.left++
		d.waiters[p] = append(d.waiters[p], k)
	}
	if w.left == 0 {
		d.decide(k, w, decision{})
	}
}

// ended is job k's end in state st, told to the jobs that wait for it.
// d.mu held.
func (d *deps) ended(k jobKey, st jobs.State) {
	children := d.waiters[k]
	if children == nil {
		return
	}
	delete(d.waiters, k)
	for _, c := range children {
		if w, ok := d.waiting[c]; ok {
			w.left--
			d.parentEnded(c, w, k.String(), st)
		}
	}
}

// parentEnded decides waiting job k on its parent's end in state st, or on
// its last parent's. d.mu held.
func (d *deps) parentEnded(k jobKey, w *dependant, parent string, st jobs.State) {
	switch {
	case w.rule.CanceledBy(parent, st):
		d.decide(k, w, decision{parent: parent, st: st})
	case w.left == 0:
		d.decide(k, w, decision{})
	}
}

// decide has waiting job k settled as dec says, once. d.mu held.
func (d *deps) decide(k jobKey, w *dependant, dec decision) {
	if w.decided {
		return
	}
	w.decided = true
	dec.seq = w.seq
	d.todo[k] = dec
	if !d.started {
		d.started = true
		ctx, stop := context.WithCancel(context.Background())
		d.stop = stop
		d.done.Go(func() { d.run(ctx) })
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run settles what is decided, each again every settleRetry until done.
func (d *deps) run(ctx context.Context) {
	for {
		d.mu.Lock()
		batch := make(map[jobKey]decision, len(d.todo))
		for k, dec := range d.todo {
			batch[k] = dec
		}
		d.mu.Unlock()
		var failed atomic.Bool
		sem := make(chan struct{}, settleAtOnce)
		var wg sync.WaitGroup
		for k, dec := range batch {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				err := d.settle(ctx, k.String(), dec.seq, dec.parent, dec.st)
				if errors.Is(err, errParentAgain) {
					d.again(ctx, k, dec)
					return
				}
				if err != nil {
					failed.Store(true)
					return
				}
				d.mu.Lock()
				if cur, ok := d.todo[k]; ok && cur == dec {
					delete(d.todo, k)
				}
				d.mu.Unlock()
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		var again <-chan time.Time
		if failed.Load() {
			again = time.After(settleRetry)
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-again:
		}
	}
}

// again counts waiting job k's parents anew, after settleRetry: the index
// read its parent's earlier end, and the store says it runs again (a
// Retry), which the index reads in a moment.
func (d *deps) again(ctx context.Context, k jobKey, dec decision) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(settleRetry):
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	w, ok := d.waiting[k]
	if cur, pending := d.todo[k]; !ok || !pending || cur != dec {
		return // settled meanwhile
	}
	d.forget(k)
	d.add(k, w.seq, w.after, w.rule)
}

// close stops settling.
func (d *deps) close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	stop := d.stop
	d.started = true // none after
	d.mu.Unlock()
	if stop != nil {
		stop()
	}
	d.done.Wait()
}

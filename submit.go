package crew

import (
	"context"
	"time"
)

// A task's way into the pool, in the order it is taken: Go, TryGo, Submit
// and TrySubmit check it and make its item; put queues it, waiting in
// putSlow while the queue is full, and tryPut does not wait; offer pushes it
// once and makes sure a worker will see it. What waiting submitters share is
// in submitters.go, what happens to the item next in worker.go and run.go.

// Go runs fn on a worker, waiting for room in the queue if it is full. It
// returns ErrClosed once shutdown has begun (also while it waits) and
// ErrNilFunc for a nil fn. A panic in fn is recovered, counted and handed to
// the panic handler. Go allocates nothing.
func (p *Pool) Go(fn func(), opts ...TaskOption) error {
	var it item
	if err := shortItem(&it, fn, opts); err != nil {
		return err
	}
	return p.put(nil, &it)
}

// TryGo is Go without waiting: it returns ErrQueueFull when the queue has no
// room.
func (p *Pool) TryGo(fn func(), opts ...TaskOption) error {
	var it item
	if err := shortItem(&it, fn, opts); err != nil {
		return err
	}
	return p.tryPut(&it)
}

// shortItem fills *it, a zero item, for a short task. Filled in place, not
// returned: the item is the submitter's whole cost besides the push.
func shortItem(it *item, fn func(), opts []TaskOption) error {
	if fn == nil {
		return ErrNilFunc
	}
	it.fn = fn
	if len(opts) > 0 {
		var tc taskConfig
		if err := tc.apply(opts, true); err != nil {
			return err
		}
		it.name = tc.name
	}
	return nil
}

// Submit queues fn as a long task and returns its handle. It waits for room
// in the queue and gives up with ctx.Err() when ctx ends first, or with
// ErrClosed when shutdown begins. ctx bounds only the wait and lends its
// values to the task's context; the task's context is cancelled by the
// task's timeout (Timeout, or WithTaskTimeout), by a hard stop and when the
// task ends, never by ctx.
func (p *Pool) Submit(ctx context.Context, fn func(context.Context) error, opts ...TaskOption) (*Task, error) {
	if ctx == nil {
		return nil, invalid("nil context")
	}
	t, err := p.newTask(ctx, fn, opts)
	if err != nil {
		return nil, err
	}
	if err := p.put(ctx, &item{t: t}); err != nil {
		return nil, err
	}
	return t, nil
}

// TrySubmit is Submit without waiting: it returns ErrQueueFull when the queue
// has no room. The task's context takes no values.
func (p *Pool) TrySubmit(fn func(context.Context) error, opts ...TaskOption) (*Task, error) {
	t, err := p.newTask(nil, fn, opts)
	if err != nil {
		return nil, err
	}
	if err := p.tryPut(&item{t: t}); err != nil {
		return nil, err
	}
	return t, nil
}

func (p *Pool) newTask(ctx context.Context, fn func(context.Context) error, opts []TaskOption) (*Task, error) {
	if fn == nil {
		return nil, ErrNilFunc
	}
	tc := taskConfig{timeout: p.cfg.taskTimeout}
	if err := tc.apply(opts, false); err != nil {
		return nil, err
	}
	t := &Task{fn: fn}
	t.init(p, tc.name, tc.timeout, ctx)
	return t, nil
}

// put queues it, waiting for room; a nil ctx waits until shutdown. A
// context that has already ended is refused even when there is room.
func (p *Pool) put(ctx context.Context, it *item) error {
	var err error
	if ctx != nil && p.level.Load() != levelOpen {
		err = ErrClosed
	} else if ctx != nil {
		err = ctx.Err()
	}
	if err == nil {
		switch p.offer(it) {
		case pushed:
			return nil
		case closed:
			err = ErrClosed
		default:
			err = p.putSlow(ctx, it)
		}
	}
	if err != nil {
		p.counts.refused.Add(1)
	}
	return err
}

// tryPut queues it without waiting.
func (p *Pool) tryPut(it *item) error {
	err := ErrClosed
	switch p.offer(it) {
	case pushed:
		return nil
	case full:
		err = ErrQueueFull
	}
	p.counts.refused.Add(1)
	return err
}

// putSlow waits on the list until a worker frees a slot, ctx ends or
// shutdown begins.
func (p *Pool) putSlow(ctx context.Context, it *item) error {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	s := &p.submitters
	wake := s.channel()
	defer s.recycle(wake) // every path below leaves it empty and unlisted
	for {
		s.add(wake)
		switch p.offer(it) {
		case pushed:
			s.leave(wake)
			return nil
		case closed:
			s.leave(wake)
			return ErrClosed
		}
		select {
		case <-wake:
		case <-done:
			s.leave(wake)
			return ctx.Err()
		case <-p.closing:
			s.leave(wake)
			return ErrClosed
		}
	}
}

// offer stamps it for the observer, pushes it once and, if it went in,
// makes sure a worker will see it (workerSet's rule 2).
func (p *Pool) offer(it *item) pushResult {
	if p.cfg.observer != nil {
		it.enq = time.Since(p.epoch)
	}
	r := p.q.push(it)
	yieldpoint()
	switch r {
	case pushed:
		p.workers.notify(false)
	case overtaken:
		p.workers.notify(true) // the recruit hands on to the later pushes
		r = pushed
	}
	return r
}

package crew

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// submitters is the list of submitters blocked for room in the queue, in
// arrival order. A waiter registers before it retries its push, and a
// worker looks at count after each pop, so a freed slot is never missed:
// of the two, at least one sees the other.
type submitters struct {
	count atomic.Int32 // listed waiters, read by workers after every pop

	mu    sync.Mutex
	list  []chan struct{}
	spare []chan struct{} // waiter channels to reuse
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

func (s *submitters) channel() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.spare); n > 0 {
		wake := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return wake
	}
	return make(chan struct{}, 1)
}

func (s *submitters) recycle(wake chan struct{}) {
	s.mu.Lock()
	s.spare = append(s.spare, wake)
	s.mu.Unlock()
}

func (s *submitters) add(wake chan struct{}) {
	s.mu.Lock()
	s.list = append(s.list, wake)
	s.count.Add(1)
	s.mu.Unlock()
}

// leave takes wake off the list. If a worker had already taken it off, its
// signal is on the way: it is received and passed on, so that it is neither
// lost nor left in the channel.
func (s *submitters) leave(wake chan struct{}) {
	s.mu.Lock()
	for i, w := range s.list {
		if w == wake {
			s.list = slices.Delete(s.list, i, i+1)
			s.count.Add(-1)
			s.mu.Unlock()
			return
		}
	}
	s.mu.Unlock()
	<-wake
	s.wakeOne()
}

// wakeOne tells the longest-waiting submitter that there is room.
func (s *submitters) wakeOne() {
	s.mu.Lock()
	if len(s.list) == 0 {
		s.mu.Unlock()
		return
	}
	w := s.list[0]
	// Shift in place: the list keeps its capacity, so a submitter that
	// blocks again and again does not allocate.
	s.list = slices.Delete(s.list, 0, 1)
	s.count.Add(-1)
	s.mu.Unlock()
	w <- struct{}{}
}

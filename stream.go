package crew

import (
	"context"
	"sync"
)

// Stream runs tasks on a pool and hands their values to a callback in
// submission order, each as soon as it and every task before it are done
// (conc's stream). The callback runs on one goroutine at a time, never
// concurrently with itself; it may block, which holds back later values,
// not the tasks.
type Stream[T any] struct {
	g     *Group
	each  func(T, error)
	store resultStore[T]

	mu       sync.Mutex
	next     int  // the first place not yet handed to each
	emitting bool // someone is calling each
}

// NewStream returns a stream running on pool that calls each with every
// task's value and error; see NewGroup for the options and the context.
func NewStream[T any](ctx context.Context, pool *Pool, each func(T, error), opts ...GroupOption) (*Stream[T], context.Context) {
	g, gctx := NewGroup(ctx, pool, opts...)
	if each == nil && g.cfgErr == nil {
		g.cfgErr = ErrNilFunc
	}
	return &Stream[T]{g: g, each: each}, gctx
}

// Go runs fn as the next task of the stream. Refusals are as for Group.Go;
// a refused task still takes its place, with its error.
func (s *Stream[T]) Go(fn func(context.Context) (T, error), opts ...TaskOption) error {
	if fn == nil {
		return s.g.Go(nil)
	}
	_, r := s.store.next()
	ctx := s.g.ctx
	err := s.g.Go(func() error {
		err := r.run(ctx, fn)
		s.emit(false)
		return err
	}, opts...)
	if err != nil {
		r.err = err
		r.done.Store(true)
	}
	return err
}

// emit hands every ready value, in order, to each; with all it also hands
// over the places of tasks that never ran.
func (s *Stream[T]) emit(all bool) {
	s.mu.Lock()
	if s.emitting {
		s.mu.Unlock()
		return // the caller in charge will see our value
	}
	s.emitting = true
	for {
		chunks, n := s.store.snapshot()
		if s.next >= n {
			break
		}
		r := &chunks[s.next/resultChunk][s.next%resultChunk]
		var v T
		var err error
		switch {
		case r.done.Load():
			v, err = r.v, r.err
		case all:
			err = context.Cause(s.g.ctx)
		default:
			s.emitting = false
			s.mu.Unlock()
			// A value may have become ready after we looked: look again
			// unless someone else has taken charge.
			if r.done.Load() {
				s.emit(false)
			}
			return
		}
		s.next++
		s.mu.Unlock()
		s.call(v, err)
		s.mu.Lock()
	}
	s.emitting = false
	s.mu.Unlock()
}

// call hands one value to each. If each panics or calls runtime.Goexit,
// the stream gives up being in charge before the panic goes on (failing
// the task it ran in, or reaching the caller of Wait), so that later
// values are still handed over and Wait does not wait for an emitter that
// is gone.
func (s *Stream[T]) call(v T, err error) {
	ok := false
	defer func() {
		if !ok {
			s.mu.Lock()
			s.emitting = false
			s.mu.Unlock()
		}
	}()
	s.each(v, err)
	ok = true
}

// Wait waits for the tasks as Group.Wait does, hands every value not yet
// handed over to the callback (a task that never ran with the cause of the
// cancellation), and returns the group's error.
func (s *Stream[T]) Wait() error {
	err := s.g.Wait()
	if s.g.cfgErr != nil {
		return err
	}
	// Every function of the group has returned, so no worker is emitting:
	// this call hands over the rest.
	s.emit(true)
	return err
}

package crew

import (
	"context"
	"sync"
	"sync/atomic"
)

// Results is a Group whose tasks return values: Wait returns them in
// submission order. Each Go costs one allocation (the closure that stores
// the value); storage comes in chunks.
type Results[T any] struct {
	g     *Group
	store resultStore[T]
}

// NewResults returns a typed group running on pool, and its context; see
// NewGroup for the options and the context.
func NewResults[T any](ctx context.Context, pool *Pool, opts ...GroupOption) (*Results[T], context.Context) {
	g, gctx := NewGroup(ctx, pool, opts...)
	return &Results[T]{g: g}, gctx
}

// Go runs fn as a task of the group; its value takes the next place in the
// order. Refusals are as for Group.Go.
func (r *Results[T]) Go(fn func(context.Context) (T, error), opts ...TaskOption) error {
	if fn == nil {
		return r.g.Go(nil)
	}
	_, s := r.store.next()
	ctx := r.g.ctx
	err := r.g.Go(func() error { return s.run(ctx, fn) }, opts...)
	if err != nil {
		s.err = err
	}
	return err
}

// Wait waits as Group.Wait does and returns every task's value in
// submission order: the zero value for a task that failed or did not run.
func (r *Results[T]) Wait() ([]T, error) {
	err := r.g.Wait()
	return r.store.values(), err
}

// Errors returns, after Wait, every task's error in submission order: nil
// for a success, and the cause of the group's cancellation for a task that
// did not run.
func (r *Results[T]) Errors() []error {
	return r.store.errors(r.g)
}

// resultStore keeps values in chunks that never move, so that a worker
// writes its place while more places are added.
type resultStore[T any] struct {
	mu     sync.Mutex
	chunks []*[resultChunk]result[T]
	n      int
}

const resultChunk = 64

type result[T any] struct {
	v    T
	err  error
	done atomic.Bool
}

func (s *resultStore[T]) next() (int, *result[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.n
	s.n++
	if i%resultChunk == 0 {
		s.chunks = append(s.chunks, new([resultChunk]result[T]))
	}
	return i, &s.chunks[i/resultChunk][i%resultChunk]
}

func (s *resultStore[T]) snapshot() ([]*[resultChunk]result[T], int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chunks, s.n
}

// run calls fn and keeps what it returns. A panic is kept as the task's
// error and passed on to the worker, which names it and reports it as it
// is.
func (r *result[T]) run(ctx context.Context, fn func(context.Context) (T, error)) error {
	var pe *PanicError
	defer func() {
		if pe != nil {
			r.err = pe
			r.done.Store(true)
			panic(passOn{pe})
		}
	}()
	defer catch("", &pe)
	v, err := fn(ctx)
	r.v, r.err = v, err
	r.done.Store(true)
	return err
}

func (s *resultStore[T]) values() []T {
	chunks, n := s.snapshot()
	out := make([]T, n)
	for i := range out {
		if r := &chunks[i/resultChunk][i%resultChunk]; r.done.Load() && r.err == nil {
			out[i] = r.v
		}
	}
	return out
}

func (s *resultStore[T]) errors(g *Group) []error {
	chunks, n := s.snapshot()
	out := make([]error, n)
	for i := range out {
		r := &chunks[i/resultChunk][i%resultChunk]
		switch {
		case r.done.Load() || r.err != nil:
			out[i] = r.err
		case g.ctx.Err() != nil:
			out[i] = context.Cause(g.ctx)
		}
	}
	return out
}

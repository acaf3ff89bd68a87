package crew

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"slices"
)

// Map calls fn on every element of in, on pool, and returns the values in
// input order. Parallelism is bounded by the pool and by a Limit option (a
// Limit above the pool's bound changes nothing: the pool's bound wins). By
// default the first error stops the rest (elements not yet started never
// run) and is returned; with JoinErrors every element is tried and all
// errors are returned joined, in input order. Each element's error, a panic
// included, is an *IndexError that says which element failed. The values of
// failed elements are zero. Map returns only after every fn it started has
// returned.
//
// The slice is split, not queued element by element: the calling goroutine
// queues a runner task per slot the pool (and Limit) can give besides its
// own, then runs elements itself, holding one of the pool's slots while it
// does, and every participant claims chunks of elements, chunks shrinking
// as the work runs out. A small batch thus costs about what the plain loop
// costs, and a large one is shared by every slot the pool can give. Stats
// and observers count the caller's share and each runner as one task of the
// pool, not each element. When the pool is paused or every slot is busy, the
// caller queues the runners (waiting for room) and waits, as Group.Wait
// does; a call already running when the pool is paused runs to its end, as
// running tasks do. Elements may run one after another on one goroutine: with more
// elements than the pool's bound, they must not wait for one another. Map
// allocates a few objects per call, whatever the length of in.
func Map[In, Out any](ctx context.Context, pool *Pool, in []In, fn func(context.Context, In) (Out, error), opts ...GroupOption) ([]Out, error) {
	if fn == nil {
		return nil, ErrNilFunc
	}
	out := make([]Out, len(in))
	err := runSplit(ctx, pool, len(in), func(ctx context.Context, i int) error {
		v, err := fn(ctx, in[i])
		if err == nil {
			out[i] = v
		}
		return err
	}, opts)
	return out, err
}

// ForEach calls fn on every element of in, as Map does, and returns the
// error(s).
func ForEach[In any](ctx context.Context, pool *Pool, in []In, fn func(context.Context, In) error, opts ...GroupOption) error {
	if fn == nil {
		return ErrNilFunc
	}
	return runSplit(ctx, pool, len(in), func(ctx context.Context, i int) error {
		return fn(ctx, in[i])
	}, opts)
}

// MapSeq is Map over a sequence: elements are submitted as the sequence
// yields them (waiting for room, so a long sequence is never held in
// memory ahead of the pool), and values come back in sequence order.
func MapSeq[In, Out any](ctx context.Context, pool *Pool, seq iter.Seq[In], fn func(context.Context, In) (Out, error), opts ...GroupOption) ([]Out, error) {
	if fn == nil || seq == nil {
		return nil, ErrNilFunc
	}
	r, _ := NewResults[Out](ctx, pool, opts...)
	i := 0
	for v := range seq {
		at := i
		i++
		if r.Go(func(ctx context.Context) (_ Out, err error) {
			defer atIndex(at, &err)
			return fn(ctx, v)
		}) != nil {
			break
		}
	}
	vs, err := r.Wait()
	return vs, r.g.inOrder(err)
}

// ForEachSeq is ForEach over a sequence.
func ForEachSeq[In any](ctx context.Context, pool *Pool, seq iter.Seq[In], fn func(context.Context, In) error, opts ...GroupOption) error {
	if fn == nil || seq == nil {
		return ErrNilFunc
	}
	g, gctx := NewGroup(ctx, pool, opts...)
	i := 0
	for v := range seq {
		at := i
		i++
		if g.Go(func() (err error) {
			defer atIndex(at, &err)
			return fn(gctx, v)
		}) != nil {
			break
		}
	}
	return g.inOrder(g.Wait())
}

// inOrder is err, what Wait returned, with a JoinErrors group's errors
// sorted by element index; errors without one (refusals) come last.
func (g *Group) inOrder(err error) error {
	if !g.join || err == nil {
		return err
	}
	g.mu.Lock()
	errs := slices.Clone(g.errs)
	g.mu.Unlock()
	slices.SortStableFunc(errs, func(a, b error) int { return cmp.Compare(indexOf(a), indexOf(b)) })
	return errors.Join(errs...)
}

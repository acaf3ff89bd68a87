package crew

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"slices"
)

// Map calls fn on every element of in, on pool, and returns the values in
// input order. Parallelism is bounded by the pool and by a Limit option.
// By default the first error stops the rest (elements not yet started
// never run) and is returned; with JoinErrors every element is tried and
// all errors come back joined, in input order. Each element's error, a
// panic included, is an *IndexError naming the element; failed elements'
// values are zero. Map returns once every fn it started has returned.
//
// The caller runs elements itself on one of the pool's slots, beside a
// runner task for each other slot the pool can give, every participant
// claiming chunks that shrink as the work runs out; Stats count the caller
// and each runner as one task. On a paused pool, or one with every slot
// busy, the caller queues the runners and waits (so a Map called from a
// task of the same pool at its bound waits for ever: see NewGroup).
// Elements may run one after another on one goroutine: they must not wait
// for one another. Map allocates a few objects per call, whatever the
// length of in.
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

package crew

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"math"
	"slices"
)

// Map calls fn on every element of in, as tasks of one group on pool, and
// returns the values in input order. Parallelism is bounded by the pool and
// by a Limit option (a Limit above the pool's bound changes nothing: the
// pool's bound wins). By default the first error stops the rest (tasks not
// yet started never run) and is returned; with JoinErrors every element is
// tried and all errors are returned joined, in input order. Each element's
// error, a panic included, is an *IndexError that says which element failed.
// The values of failed elements are zero. Map returns only after every fn
// it started has returned.
func Map[In, Out any](ctx context.Context, pool *Pool, in []In, fn func(context.Context, In) (Out, error), opts ...GroupOption) ([]Out, error) {
	if fn == nil {
		return nil, ErrNilFunc
	}
	g, gctx := NewGroup(ctx, pool, opts...)
	out := make([]Out, len(in))
	for i := range in {
		err := g.Go(func() (err error) {
			defer atIndex(i, &err)
			v, err := fn(gctx, in[i])
			if err == nil {
				out[i] = v
			}
			return err
		})
		if err != nil {
			break
		}
	}
	return out, g.inOrder(g.Wait())
}

// ForEach calls fn on every element of in, as Map does, and returns the
// error(s).
func ForEach[In any](ctx context.Context, pool *Pool, in []In, fn func(context.Context, In) error, opts ...GroupOption) error {
	if fn == nil {
		return ErrNilFunc
	}
	g, gctx := NewGroup(ctx, pool, opts...)
	for i := range in {
		if g.Go(func() (err error) {
			defer atIndex(i, &err)
			return fn(gctx, in[i])
		}) != nil {
			break
		}
	}
	return g.inOrder(g.Wait())
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

// atIndex is deferred by an element's function: it wraps the element's
// error, or its panic, in an *IndexError. A panic is recovered here and
// returned as an IndexError wrapping the *PanicError, which the group still
// counts and reports as a panic (see Group.run).
func atIndex(i int, err *error) {
	if v := recover(); v != nil {
		*err = &IndexError{Index: i, Err: panicError("", v)}
	} else if *err != nil {
		*err = &IndexError{Index: i, Err: *err}
	}
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

func indexOf(err error) int {
	if ie, ok := err.(*IndexError); ok {
		return ie.Index
	}
	return math.MaxInt
}

package crew

import (
	"context"
	"iter"
)

// Map calls fn on every element of in, as tasks of one group on pool, and
// returns the values in input order. Parallelism is bounded by the pool and
// by a Limit option. By default the first error stops the rest (tasks not
// yet started never run) and is returned; with JoinErrors every element is
// tried and all errors are returned joined. The values of failed elements
// are zero. Map returns only after every fn it started has returned.
func Map[In, Out any](ctx context.Context, pool *Pool, in []In, fn func(context.Context, In) (Out, error), opts ...GroupOption) ([]Out, error) {
	if fn == nil {
		return nil, ErrNilFunc
	}
	g, gctx := NewGroup(ctx, pool, opts...)
	out := make([]Out, len(in))
	for i := range in {
		err := g.Go(func() error {
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
	return out, g.Wait()
}

// ForEach calls fn on every element of in, as Map does, and returns the
// error(s).
func ForEach[In any](ctx context.Context, pool *Pool, in []In, fn func(context.Context, In) error, opts ...GroupOption) error {
	if fn == nil {
		return ErrNilFunc
	}
	g, gctx := NewGroup(ctx, pool, opts...)
	for i := range in {
		if g.Go(func() error { return fn(gctx, in[i]) }) != nil {
			break
		}
	}
	return g.Wait()
}

// MapSeq is Map over a sequence: elements are submitted as the sequence
// yields them (waiting for room, so a long sequence is never held in
// memory ahead of the pool), and values come back in sequence order.
func MapSeq[In, Out any](ctx context.Context, pool *Pool, seq iter.Seq[In], fn func(context.Context, In) (Out, error), opts ...GroupOption) ([]Out, error) {
	if fn == nil || seq == nil {
		return nil, ErrNilFunc
	}
	r, _ := NewResults[Out](ctx, pool, opts...)
	for v := range seq {
		if r.Go(func(ctx context.Context) (Out, error) { return fn(ctx, v) }) != nil {
			break
		}
	}
	return r.Wait()
}

// ForEachSeq is ForEach over a sequence.
func ForEachSeq[In any](ctx context.Context, pool *Pool, seq iter.Seq[In], fn func(context.Context, In) error, opts ...GroupOption) error {
	if fn == nil || seq == nil {
		return ErrNilFunc
	}
	g, gctx := NewGroup(ctx, pool, opts...)
	for v := range seq {
		if g.Go(func() error { return fn(gctx, v) }) != nil {
			break
		}
	}
	return g.Wait()
}

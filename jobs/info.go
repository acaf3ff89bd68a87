package jobs

import "context"

// Info is what a run knows of its job, from its context (InfoOf): its id,
// to key the job's effects by (a payment's idempotency key, a row's
// primary key), so that a second run finds the first one's effect; its
// kind; and its attempt, 1 for the first run.
type Info struct {
	ID      string
	Kind    string
	Attempt int
	After   []string // its parents (Spec.After), whose results ParentResult reads
}

type infoKey struct{}

// WithInfo returns ctx carrying info, for a store to give a run.
func WithInfo(ctx context.Context, info Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// InfoOf returns the Info of the job whose run ctx is; the zero Info
// outside a run.
func InfoOf(ctx context.Context) Info {
	info, _ := ctx.Value(infoKey{}).(Info)
	return info
}

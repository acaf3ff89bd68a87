package auth

import "context"

// Caller is who a request's token names, and what it may do.
type Caller struct {
	Name   string
	scopes scopes
}

// Has reports whether the caller's token holds scope sc.
func (c Caller) Has(sc Scope) bool { return c.scopes.has(sc) }

// Scopes is the caller's scopes, comma-separated.
func (c Caller) Scopes() string { return c.scopes.String() }

type callerKey struct{}

// WithCaller is ctx carrying c, the caller of its request.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf is the caller ctx carries; ok is false when it carries none
// (crewd serves without tokens).
func CallerOf(ctx context.Context) (c Caller, ok bool) {
	c, ok = ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// Anyone is the caller of a crewd that serves without tokens (on loopback,
// or with -insecure-no-auth): every scope, no name.
func Anyone() Caller { return Caller{scopes: 1<<len(Scopes) - 1} }

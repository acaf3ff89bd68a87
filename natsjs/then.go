package natsjs

import (
	"context"
	"errors"
)

// Then, returned by a handler, says that the message's work is done and
// what is left (fn: recording its outcome, say) need not hold a slot of the
// pool: the handler's task ends, so that the next message may start, and
// the Source calls fn off the pool, then settles the message on what fn
// returns as it would on a handler's return (nil acks it, an error naks it,
// Unavailable and RetryAfter as a handler's). Until then the message is held
// as a running one: its lease is renewed, fn's context ends with
// ErrLeaseLost when the lease is lost, and Shutdown waits for it; once a
// Shutdown's context ended first and the pool has stopped too, it is let
// go (fn's context ends with ErrLeaseLost, its lease is renewed no more),
// so that an fn ignoring its context cannot hold the message for ever.
//
// fn's context has the values of the context the Source gave the handler
// (not those the handler or a middleware added: fn's closure keeps what it
// needs), but not its end: a hard stop of the pool or the task's own
// timeout do not end it; a lost lease and a stop given up do. At most as
// many fns run off the pool at once as the pool's bound; beyond that, fn
// runs in the handler's task with the handler's context, holding its
// slot, so that what runs off the pool stays within the pool's bound and a
// Source whose fns are slow (a store out) slows its pulls as if they held
// slots. Then(nil) is nil.
func Then(fn func(ctx context.Context) error) error {
	if fn == nil {
		return nil
	}
	return &thenError{fn}
}

// ThenFunc returns what a handler left with Then, if err is Then's: for a
// middleware that wraps handlers and must wrap what they leave too.
func ThenFunc(err error) (fn func(ctx context.Context) error, ok bool) {
	var t *thenError
	if errors.As(err, &t) {
		return t.fn, true
	}
	return nil, false
}

type thenError struct{ fn func(context.Context) error }

func (e *thenError) Error() string {
	return "natsjs: the handler's work is done; its settlement follows"
}

// then runs what a handler left with Then, if it did: off the pool when
// there is room (it reports true: the caller must not settle m), else here,
// on the task's slot, returning fn's error to settle with. err is the
// handler's return and mc its context.
func (s *Source) then(m *Msg, mc *msgContext, err error) (off bool, _ error) {
	fn, ok := ThenFunc(err)
	if !ok {
		return false, err
	}
	if n := s.afters.Add(1); n > s.afterMax.Load() {
		s.afters.Add(-1)
		return false, fn(mc)
	}
	// The message's context from now on: the task's values without its
	// end, ended by a lost lease only. Renewals see it from the store on;
	// a lease lost before, while renewals still saw the handler's
	// context, is read from m.lost (set under s.mu before that context
	// was cancelled).
	ac := &msgContext{Context: context.WithoutCancel(mc.Context), src: s, off: true}
	m.ctx.Store(ac)
	s.mu.Lock()
	lost := m.lost
	s.mu.Unlock()
	if lost || errors.Is(mc.cause(), ErrLeaseLost) {
		ac.cancelWith(ErrLeaseLost)
	}
	go s.after(m, ac, fn)
	return true, nil
}

// after runs fn off the pool and settles m on its return; a panic in fn is
// an error, as in a handler.
func (s *Source) after(m *Msg, ac *msgContext, fn func(context.Context) error) {
	defer s.afters.Add(-1)
	returned := false
	defer func() {
		if returned {
			return
		}
		s.settle(m, ac, ac.Context, s.panicked(m, recover(), "what the handler left"))
	}()
	err := fn(ac)
	returned = true
	ac.release()
	s.settle(m, ac, ac.Context, err)
}

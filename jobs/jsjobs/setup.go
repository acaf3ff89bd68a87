package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// setupAttempt bounds one attempt at the setup, so that a request nobody
// answers (a cluster without a leader yet) leaves time for the next.
const setupAttempt = 5 * time.Second

// setupBackoff is the wait after the first failed attempt; it doubles up
// to setupMaxBackoff.
const (
	setupBackoff    = 250 * time.Millisecond
	setupMaxBackoff = 2 * time.Second
)

// retrySetup runs attempt, each try bounded by setupAttempt, until it
// succeeds, fails for good (not transient), or ctx ends; then the error
// is the last attempt's.
func retrySetup(ctx context.Context, log *slog.Logger, attempt func(context.Context) error) error {
	wait := setupBackoff
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, setupAttempt)
		err := attempt(actx)
		cancel()
		if err == nil || !transient(err) || ctx.Err() != nil {
			if err != nil && n > 1 {
				return fmt.Errorf("%w (after %d attempts)", err, n)
			}
			return err
		}
		if log != nil {
			log.Info("JetStream not ready yet; trying again", "attempt", n, "in", wait.String(), "error", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (after %d attempts)", err, n)
		case <-time.After(wait):
		}
		wait = min(2*wait, setupMaxBackoff)
	}
}

// Error codes of the server that a forming cluster answers with.
const (
	codeClusterNoPeers  jetstream.ErrorCode = 10005 // no suitable peers for placement (yet)
	codeClusterNotReady jetstream.ErrorCode = 10009 // JetStream cluster can not handle request
)

// transient reports whether a setup error may go away by itself while a
// JetStream cluster forms: no answer in time, no responders (no meta
// leader yet), a 503 ("JetStream system temporarily unavailable",
// "insufficient resources"), or too few peers for the replicas.
func transient(err error) bool {
	var api *jetstream.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return true
	case errors.As(err, &api):
		return api.Code == 503 || api.ErrorCode == codeClusterNoPeers || api.ErrorCode == codeClusterNotReady
	}
	return false
}

// findOrCreate creates a thing, or finds it when create says it exists
// already (with other settings, or made by another crewd meanwhile).
func findOrCreate[T any](ctx context.Context, create, find func() (T, error), exists error) (T, error) {
	t, err := create()
	if errors.Is(err, exists) {
		return find()
	}
	return t, err
}

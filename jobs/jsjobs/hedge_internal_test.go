package jsjobs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestHedgedReadsPastACutReplica: a read whose first tries go to a replica
// that never answers (cut off the network) is answered by the first try
// that reaches another, hedgeFloor after the one before it (a store that answered nothing yet); the tries left
// end before hedged returns.
func TestHedgedReadsPastACutReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		var tries, ended atomic.Int32
		start := time.Now()
		v, err := hedged(ctx, &hedger{}, func(ctx context.Context) (int, error) {
			defer ended.Add(1)
			if n := tries.Add(1); n <= 3 { // the cut replica
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return 42, nil
		})
		if err != nil || v != 42 {
			t.Fatalf("hedged = %d, %v; want 42, nil", v, err)
		}
		if took := time.Since(start); took != 3*hedgeFloor {
			t.Errorf("answered after %v, want %v (the fourth try's start)", took, 3*hedgeFloor)
		}
		if tries.Load() != 4 || ended.Load() != 4 {
			t.Errorf("%d tries, %d ended when hedged returned; want 4 and 4", tries.Load(), ended.Load())
		}
	})
}

// TestHedgedGivesUpWithItsDeadline: with no replica answering, hedged
// sends hedgeTries tries and returns the timeout at ctx's deadline, not
// before and not after; an answer that is no timeout (not found) is
// returned at once, never tried again.
func TestHedgedGivesUpWithItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		var tries atomic.Int32
		start := time.Now()
		_, err := hedged(ctx, &hedger{}, func(ctx context.Context) (int, error) {
			tries.Add(1)
			<-ctx.Done()
			return 0, ctx.Err()
		})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want the deadline", err)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("gave up after %v, want 2s", took)
		}
		if tries.Load() != hedgeTries {
			t.Errorf("%d tries, want %d", tries.Load(), hedgeTries)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		var tries atomic.Int32
		_, err := hedged(t.Context(), &hedger{}, func(ctx context.Context) (int, error) {
			tries.Add(1)
			return 0, jetstream.ErrKeyNotFound
		})
		if !errors.Is(err, jetstream.ErrKeyNotFound) || tries.Load() != 1 {
			t.Errorf("err %v after %d tries, want not found after 1", err, tries.Load())
		}
	})
}

// TestHedgedWaitsAsLongAsAnswersTake: a store whose answers take 300 ms
// has a read sent again only after 500 ms (twice its answers' time, at
// most hedgeCeiling), not every 100 ms: a slow store is not asked each
// read several times over. A store answering in 2 ms: after 100 ms.
func TestHedgedWaitsAsLongAsAnswersTake(t *testing.T) {
	var slow, fast hedger
	for range 100 {
		slow.observe(300 * time.Millisecond)
		fast.observe(2 * time.Millisecond)
	}
	if w := slow.wait(); w != hedgeCeiling {
		t.Errorf("answers of 300 ms: sent again after %v, want %v", w, hedgeCeiling)
	}
	if w := fast.wait(); w != hedgeFloor {
		t.Errorf("answers of 2 ms: sent again after %v, want %v", w, hedgeFloor)
	}
	synctest.Test(t, func(t *testing.T) {
		var tries atomic.Int32
		v, err := hedged(t.Context(), &slow, func(ctx context.Context) (int, error) {
			tries.Add(1)
			select {
			case <-time.After(300 * time.Millisecond):
				return 7, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		})
		if v != 7 || err != nil || tries.Load() != 1 {
			t.Errorf("a slow store's read: %d, %v after %d tries; want 7 after 1", v, err, tries.Load())
		}
	})
}

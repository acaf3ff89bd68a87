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
		var h hedger
		v, err := hedged(ctx, &h, func(ctx context.Context) (int, error) {
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
		if tries.Load() != 4 || ended.Load() != 1 {
			t.Errorf("%d tries, %d ended when hedged returned; want 4 and 1 (the earlier three waited for)", tries.Load(), ended.Load())
		}
		time.Sleep(hedgeGrace)
		synctest.Wait()
		if ended.Load() != 4 || h.first() != hedgeSuspectTries {
			t.Errorf("%v after the answer, %d tries ended and %d tries a read; want 4 and %d (suspect)", hedgeGrace, ended.Load(), h.first(), hedgeSuspectTries)
		}
		if h.reads.Load() != 1 || h.tries.Load() != 4 {
			t.Errorf("counted %d reads and %d tries, want 1 and 4", h.reads.Load(), h.tries.Load())
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

// TestHedgedSuspectsACutReplica: a read answered by a try sent again while
// its first is still out, and still out hedgeGrace later (a replica cut
// off), makes the store suspect, and the reads that follow within
// hedgeSuspect are each sent hedgeSuspectTries times at once, so that one
// read waits only when all of them went to the cut replica; past
// hedgeSuspect without another such answer, a read is sent once again. A
// store merely slow, whose first try answers after the read was sent
// again, is never suspect, nor a busy one whose first tries answer late
// (within hedgeGrace), a read in ten, after the second tries have.
func TestHedgedSuspectsACutReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h hedger
		var tries atomic.Int32
		cut := func(ctx context.Context) (int, error) {
			if tries.Add(1) == 1 { // the first try goes to the cut replica
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return 1, nil
		}
		if _, err := hedged(t.Context(), &h, cut); err != nil {
			t.Fatal(err)
		}
		if n := h.first(); n != 1 {
			t.Fatalf("as a read is answered past its first try, %d tries at once; want 1 (its first waited for)", n)
		}
		time.Sleep(hedgeGrace)
		synctest.Wait()
		if n := h.first(); n != hedgeSuspectTries {
			t.Fatalf("the first try unanswered %v after the answer: %d tries at once; want %d", hedgeGrace, n, hedgeSuspectTries)
		}
		// Suspect: four tries at once, the first of them still hanging.
		tries.Store(0)
		start := time.Now()
		if _, err := hedged(t.Context(), &h, cut); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 0 || tries.Load() != hedgeSuspectTries {
			t.Errorf("a suspect store's read: %d tries, answered after %v; want %d at once, answered at once", tries.Load(), took, hedgeSuspectTries)
		}
		time.Sleep(hedgeSuspect)
		if n := h.first(); n != 1 {
			t.Errorf("%v after the last sign of a cut replica, %d tries at once; want 1", hedgeSuspect, n)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		var h hedger
		var tries atomic.Int32
		v, err := hedged(t.Context(), &h, func(ctx context.Context) (int, error) {
			n := tries.Add(1)
			if n == 1 { // the first try answers, late (300 ms: sent again at 100 ms)
				time.Sleep(300 * time.Millisecond)
				return 1, nil
			}
			<-ctx.Done()
			return 0, ctx.Err()
		})
		if v != 1 || err != nil || tries.Load() < 2 {
			t.Fatalf("a slow store's read: %d, %v after %d tries; want 1 after at least 2", v, err, tries.Load())
		}
		if n := h.first(); n != 1 {
			t.Errorf("a slow store answering its first try late: %d tries at once; want 1 (not suspect)", n)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// A busy store: one read in ten has its first try answered 300 ms
		// late, after the second (sent again at 100 ms) has answered.
		var h hedger
		for i := range 200 {
			var tries atomic.Int32
			_, err := hedged(t.Context(), &h, func(ctx context.Context) (int, error) {
				if tries.Add(1) == 1 && i%10 == 0 {
					select {
					case <-time.After(300 * time.Millisecond):
						return 1, nil
					case <-ctx.Done():
						return 0, ctx.Err()
					}
				}
				return 1, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
			if n := h.first(); n != 1 {
				t.Fatalf("a busy store, one read in ten answered by its second try: suspect after %d reads", i+1)
			}
		}
		time.Sleep(hedgeGrace)
		if n := h.first(); n != 1 {
			t.Fatalf("a busy store: suspect once its late tries answered")
		}
	})
}

// TestHedgedEndsWithItsCallersCancel: the tries do not take the caller's
// cancel (those before an answer outlive it: hedged), yet a read canceled
// returns at once, its tries ended.
func TestHedgedEndsWithItsCallersCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		var running atomic.Int32
		start := time.Now()
		_, err := hedged(ctx, &hedger{}, func(ctx context.Context) (int, error) {
			running.Add(1)
			defer running.Add(-1)
			<-ctx.Done()
			return 0, ctx.Err()
		})
		if !errors.Is(err, context.Canceled) || time.Since(start) != 50*time.Millisecond {
			t.Errorf("canceled at 50ms: %v after %v", err, time.Since(start))
		}
		if n := running.Load(); n != 0 {
			t.Errorf("%d tries still running once hedged returned", n)
		}
	})
}

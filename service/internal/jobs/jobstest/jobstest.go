// Package jobstest holds the tests that every jobs.KeyedRunner must pass,
// and the specs they submit, for the stores' tests.
package jobstest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/service/internal/jobs"
)

// Factorial is the spec of a factorial job.
func Factorial(n int) jobs.Spec { return jobs.Spec{Kind: "factorial", N: &n} }

// Sleep is the spec of a sleep job.
func Sleep(d time.Duration) jobs.Spec { return jobs.Spec{Kind: "sleep", Duration: jobs.Duration(d)} }

// submitOnceRace posts spec under key n times at once, spread over the
// runners, and returns the ids answered and how many were not replays.
func submitOnceRace(t *testing.T, runners []jobs.KeyedRunner, key string, spec jobs.Spec, n int) (map[string]int, int) {
	t.Helper()
	var (
		mu    sync.Mutex
		ids   = map[string]int{}
		first int
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			rec, replayed, err := runners[i%len(runners)].SubmitOnce(context.Background(), spec, key)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[rec.ID]++
			if !replayed {
				first++
			}
		})
	}
	wg.Wait()
	return ids, first
}

// CheckKeyed holds runners (one, or several sharing a store: replicas) to
// the idempotency-key contract of jobs.KeyedRunner: 16 posts at once under
// one key make one job; the same request spelled otherwise is a replay;
// another request under the key is ErrKeyReused; another key, another
// job; a malformed key is an *InvalidError.
func CheckKeyed(t *testing.T, runners ...jobs.KeyedRunner) {
	t.Helper()
	r := runners[0]
	ids, first := submitOnceRace(t, runners, "8e03978e-40d5-43e8-bc93-6894a57f9324", Factorial(10), 16)
	if len(ids) != 1 || first != 1 {
		t.Fatalf("16 posts under one key: ids %v, %d not replays; want one job", ids, first)
	}
	var id string
	for id = range ids {
	}
	// The same request spelled otherwise (the default timeout given) is
	// the same request; another is refused.
	rec, replayed, err := r.SubmitOnce(context.Background(), jobs.Spec{Kind: "factorial", N: Factorial(10).N, Timeout: jobs.Duration(time.Second)}, "8e03978e-40d5-43e8-bc93-6894a57f9324")
	if err != nil || rec.ID != id || !replayed {
		t.Fatalf("the same request again: %+v %v %v", rec, replayed, err)
	}
	if _, _, err := r.SubmitOnce(context.Background(), Factorial(11), "8e03978e-40d5-43e8-bc93-6894a57f9324"); !errors.Is(err, jobs.ErrKeyReused) || !strings.Contains(err.Error(), id) {
		t.Fatalf("another request under the key: %v", err)
	}
	// Another key, another job.
	other, replayed, err := r.SubmitOnce(context.Background(), Factorial(10), "another")
	if err != nil || other.ID == id || replayed {
		t.Fatalf("another key: %+v %v %v", other, replayed, err)
	}
	for _, key := range []string{"", strings.Repeat("k", 256), "tab\there", "é"} {
		var invalid *jobs.InvalidError
		if _, _, err := r.SubmitOnce(context.Background(), Factorial(1), key); !errors.As(err, &invalid) {
			t.Fatalf("key %.20q: %v", key, err)
		}
	}
}

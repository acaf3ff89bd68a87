package kinds_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/service/internal/kinds"
)

// TestSleepReportsProgress: a sleep of 3 s reports a third and two thirds
// of its duration gone, a second apart; one of 500 ms reports nothing.
func TestSleepReportsProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := kinds.New()
		run := func(d string) []jobs.ProgressReport {
			p, err := ks.Prepare(jobs.Spec{Kind: "sleep", Args: json.RawMessage(`{"duration":"` + d + `"}`)}, time.Minute, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var got []jobs.ProgressReport
			w := jobs.NewProgressWriter(func(r jobs.ProgressReport) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, r)
			})
			if _, err := p.Run(jobs.WithProgress(context.Background(), w)); err != nil {
				t.Fatal(err)
			}
			w.Stop()
			mu.Lock()
			defer mu.Unlock()
			return got
		}
		got := run("3s")
		if len(got) != 2 || got[0].Fraction != 1.0/3 || got[1].Fraction != 2.0/3 || got[1].Note != "slept 2s of 3s" {
			t.Fatalf("a sleep of 3s reported %+v, want 1/3 and 2/3", got)
		}
		if got := run("500ms"); len(got) != 0 {
			t.Fatalf("a sleep of 500ms reported %+v, want nothing", got)
		}
	})
}

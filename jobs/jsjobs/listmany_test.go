package jsjobs_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

var manyRecords = flag.Int("records", 5_000, "TestListManyRecords: how many finished records to list (the issue's figure: 1000000)")

// TestListManyRecords lists pages of 100 out of many finished records
// (-records, 5,000 by default; a million with -records 1000000), a tenth
// of them failed and a hundredth timed out, written straight into the
// bucket, and logs how long the index took to read them, how long a page
// and the counts take, and the index's memory. It checks the counts and
// that paging through the timed-out ones sees each once; the times are
// logged, not asserted.
func TestListManyRecords(t *testing.T) {
	n := *manyRecords
	c := newCluster(t)
	cfg := jsConfig()
	cfg.StoreBytes = int64(n)*400 + 64<<20
	r := c.runner(t, cfg)
	closeRunner(t, r)
	ctx := context.Background()
	want := jobs.Counts{}
	written := time.Now()
	for i := range n {
		rec := jobs.Record{ID: fmt.Sprintf("%016x", i+1), Kind: "factorial", State: jobs.Succeeded, Created: written, Finished: written, Attempts: 1}
		switch {
		case i%100 == 0:
			rec.State, rec.Kind, rec.Error = jobs.TimedOut, "sleep", "job timed out after 1s"
		case i%10 == 0:
			rec.State, rec.Error = jobs.Failed, "failed"
		default:
			rec.Result = json.RawMessage("120")
		}
		want[rec.State]++
		b, _ := json.Marshal(rec)
		if _, err := c.js.PublishAsync("$KV.jobs."+rec.ID, b); err != nil {
			t.Fatal(err)
		}
		if i%2_000 == 1_999 {
			<-c.js.PublishAsyncComplete()
		}
	}
	select {
	case <-c.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("writes not acked in a minute")
	}
	t.Logf("%d records written in %v", n, time.Since(written).Round(time.Millisecond))

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var counts jobs.Counts
	var err error
	for {
		// The first call starts the index; it answers ErrUnavailable
		// until the index has read the bucket.
		if counts, err = r.Counts(lctx); err == nil || lctx.Err() != nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	loaded := time.Since(start)
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("index read %d records in %v, heap %+.0f MB", n, loaded.Round(time.Millisecond), float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20))
	for _, st := range []jobs.State{jobs.Succeeded, jobs.Failed, jobs.TimedOut} {
		if counts[st] != want[st] {
			t.Fatalf("counts %v, want %v", counts, want)
		}
	}

	for _, q := range []jobs.Query{
		{State: jobs.Failed}, {State: jobs.Succeeded}, {State: jobs.TimedOut}, {State: jobs.TimedOut, Kind: "sleep"}, {},
	} {
		var took []time.Duration
		q.Limit = 100
		for range 20 {
			start := time.Now()
			p, err := r.List(ctx, q)
			took = append(took, time.Since(start))
			if err != nil || len(p.Jobs) != min(100, n/100) && q.State == jobs.TimedOut || len(p.Jobs) == 0 {
				t.Fatalf("List(%+v): %d jobs, %v", q, len(p.Jobs), err)
			}
			q.After = p.Next
		}
		slices.Sort(took)
		t.Logf("a page of 100 %-26s p50 %v, max %v", fmt.Sprintf("%+v:", jobs.Query{State: q.State, Kind: q.Kind}), took[len(took)/2].Round(10*time.Microsecond), took[len(took)-1].Round(10*time.Microsecond))
	}
	start = time.Now()
	if _, err := r.Counts(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("counts in %v", time.Since(start).Round(10*time.Microsecond))
	if got := listAll(t, r, jobs.Query{State: jobs.TimedOut, Limit: jobs.MaxLimit}); len(got) != want[jobs.TimedOut] {
		t.Fatalf("timed out: %d listed, want %d", len(got), want[jobs.TimedOut])
	}
}

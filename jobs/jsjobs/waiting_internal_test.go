package jsjobs

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// TestReadParentsStopsAtTheFirstUnknown: parents named by a request are
// read 16 at a time; the first found nowhere is the refusal, and the reads
// not yet begun are not made, so a thousand unknown ids cost the store a
// few reads, not a thousand. Known parents are all read and returned.
func TestReadParentsStopsAtTheFirstUnknown(t *testing.T) {
	var reads atomic.Int64
	known := map[string]bool{}
	r := &Runner{get: func(ctx context.Context, id string) (jobs.Record, error) {
		reads.Add(1)
		time.Sleep(time.Millisecond) // a store's round trip
		if known[id] {
			return jobs.Record{ID: id, State: jobs.Succeeded}, nil
		}
		return jobs.Record{}, jobs.ErrNotFound
	}}
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = jobs.NewID()
	}
	_, err := r.readParents(context.Background(), ids)
	var invalid *jobs.InvalidError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "no job") {
		t.Fatalf("1,000 unknown parents: %v, want an *InvalidError naming one", err)
	}
	if n := reads.Load(); n > 64 {
		t.Fatalf("1,000 unknown parents cost %d reads, want those under way at the first refusal (16 at a time)", n)
	}
	for _, id := range ids {
		known[id] = true
	}
	reads.Store(0)
	recs, err := r.readParents(context.Background(), ids)
	if err != nil || len(recs) != len(ids) || recs[999].ID != ids[999] || reads.Load() != int64(len(ids)) {
		t.Fatalf("1,000 known parents: %d records, %v, %d reads; want all, read once each", len(recs), err, reads.Load())
	}
}

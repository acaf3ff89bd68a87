package jsjobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
)

// TestLateEndOfAFirstRunDoesNotOutliveItsCancel: a first run writes
// nothing before its end (revision 0: no record). Its end, kept after its
// lease was lost, meets a cancel written since, which gives it way; but
// once the canceled record has expired (FailedTTL) the end, written over
// "no record", makes the job succeeded from nothing.
func TestLateEndOfAFirstRunDoesNotOutliveItsCancel(t *testing.T) {
	c := newCluster(t)
	cut := &cutOff{JetStream: c.js}
	cfg := jsConfig()
	cfg.FailedTTL = time.Second
	a, err := jsjobs.New(context.Background(), cut, cfg)
	if err != nil {
		t.Fatal(err)
	}
	closeRunner(t, a)
	b := c.runner(t, cfg)
	closeRunner(t, b)
	job := jobstest.Sleep(10 * time.Millisecond)
	rec := submit(t, b, job)
	body, _ := json.Marshal(job)
	cut.cut.Store(true) // a first delivery reads the record, writes nothing before its end
	ctx, loseLease := context.WithTimeout(context.Background(), time.Second)
	defer loseLease()
	if err := a.HandleFirstDelivery(ctx, "jobs."+rec.ID, body); err == nil {
		t.Fatal("the end was written while cut off")
	}
	if _, _, err := b.Cancel(context.Background(), rec.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, err := b.Get(context.Background(), rec.ID); !errors.Is(err, jobs.ErrNotFound); _, err = b.Get(context.Background(), rec.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("the canceled record never expired: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cut.cut.Store(false)
	deadline = time.Now().Add(20 * time.Second)
	for o := a.Outcomes(); o.LateEnds == 0 && o.Skipped == 0; o = a.Outcomes() {
		if time.Now().After(deadline) {
			t.Logf("the kept end was never tried: %+v", o)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got, err := b.Get(context.Background(), rec.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("record %+v (%v), outcomes %+v: a canceled job's record, expired, came back", got, err, a.Outcomes())
	}
}

package jsjobs_test

import (
	"context"
	"testing"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/internal/jobstest"
)

// TestJetStreamGetAcrossAnEnd: a job that ends (its record written, its
// message acked away) between Get's read of its record and its read of
// its message is answered from its record, never unknown; so are Cancel
// and Retry.
func TestJetStreamGetAcrossAnEnd(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	ctx := context.Background()
	stream, err := c.js.Stream(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		name string
		do   func(id string) (jobs.Record, error)
	}{
		{"Get", func(id string) (jobs.Record, error) { return r.Get(ctx, id) }},
		{"Cancel", func(id string) (jobs.Record, error) { rec, _, err := r.Cancel(ctx, id); return rec, err }},
		{"Retry", func(id string) (jobs.Record, error) { return r.Retry(ctx, id) }},
	} {
		job := submit(t, r, jobstest.Factorial(5))
		r.SetBetweenReads(func(id string) {
			r.SetBetweenReads(nil)
			m, err := stream.GetLastMsgForSubject(ctx, "jobs."+id)
			if err != nil {
				t.Fatal(err)
			}
			// The job runs and ends, then its message is acked away.
			if err := r.HandleDelivery(ctx, m.Subject, m.Data); err != nil {
				t.Fatal(err)
			}
			if err := stream.DeleteMsg(ctx, m.Sequence); err != nil {
				t.Fatal(err)
			}
		})
		rec, err := call.do(job.ID)
		if rec.State != jobs.Succeeded {
			t.Fatalf("%s of a job that ended between its reads: %+v, %v", call.name, rec, err)
		}
	}
}

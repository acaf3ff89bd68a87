package jsjobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestWritesAJob counts the replicated writes a job costs from accepted to
// ended, as the store counts them: the jobs stream's messages, the records
// bucket's, and the consumer's acks. A job is three: its message, its end,
// its ack (a waiting job is read from its message, a running one from the
// consumer's state: TestARunningJobReadsRunningWithoutARecord).
func TestWritesAJob(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	ctx := context.Background()
	seq := func(name string) uint64 {
		s, err := c.js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	acked := func() uint64 {
		info, err := r.Consumer().Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.AckFloor.Stream
	}
	jobs0, records0, acks0 := seq("jobs"), seq("KV_jobs"), acked()
	const n = 50
	var ids []string
	for i := range n {
		ids = append(ids, submit(t, r, jobstest.Factorial(i%20)).ID)
	}
	consume(t, r)
	for _, id := range ids {
		eventually(t, r, id, jobs.Succeeded)
	}
	// The ack follows the end's record: wait for the last ones.
	for deadline := time.Now().Add(10 * time.Second); acked()-acks0 < n && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	messages, records, acks := seq("jobs")-jobs0, seq("KV_jobs")-records0, acked()-acks0
	writes := float64(messages+records+acks) / n
	t.Logf("%d jobs: %d messages, %d record writes, %d acks: %.1f replicated writes a job", n, messages, records, acks, writes)
	if messages != n || records != n || acks != n {
		t.Fatalf("%d jobs cost %d messages, %d record writes and %d acks: want %d of each (3 a job)", n, messages, records, acks, n)
	}
}

// TestARunningJobReadsRunningWithoutARecord: a job on its first run has no
// record yet, and Get answers it running from its message and how far the
// consumer has delivered: one delivery, no attempt recorded yet.
func TestARunningJobReadsRunningWithoutARecord(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	job := submit(t, r, jobstest.Timed(jobstest.Sleep(time.Minute), time.Minute))
	if got, err := r.Get(context.Background(), job.ID); err != nil || got.State != jobs.Queued {
		t.Fatalf("before any consumer: %+v %v, want queued", got, err)
	}
	consume(t, r)
	got := eventually(t, r, job.ID, jobs.Running)
	if got.Attempts != 0 || got.Deliveries != 1 || got.Kind != "sleep" {
		t.Fatalf("a first run: %+v", got)
	}
	kv, err := c.js.KeyValue(context.Background(), "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(context.Background(), job.ID); err == nil {
		t.Fatalf("a first run wrote its record before its end: %s", e.Value())
	}
}

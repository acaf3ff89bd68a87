package jsjobs_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go/jetstream"
)

// TestProgressReadBack: a job reports 0.25, 0.5 and 0.75, each read back
// through Get while it runs (its first run: no record yet), then succeeds;
// its progress key is purged at its end.
func TestProgressReadBack(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	consume(t, r)
	id := jobstest.CheckProgress(t, r)
	noProgressLeft(t, c.js, "jobs", id)
}

// TestProgressReadBackPartitioned: the same through a store of three
// partitions, the key in the bucket of the job's partition.
func TestProgressReadBackPartitioned(t *testing.T) {
	c := newCluster(t)
	p := c.partitioned(t, jsConfig(), 3)
	serveOn(t, 2, func(pool *crew.Pool) (*natsjs.Source, error) { return p.Source(pool) })
	for range 3 { // a submit a partition, in turns
		id := jobstest.CheckProgress(t, p)
		bucket := "jobs"
		if k := jsjobs.PartitionOf(id); k > 0 {
			bucket += "-" + strconv.Itoa(k)
		}
		noProgressLeft(t, c.js, bucket, id)
	}
}

// noProgressLeft fails unless job id's progress key in bucket is gone.
func noProgressLeft(t *testing.T, js jetstream.JetStream, bucket, id string) {
	t.Helper()
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, "progress."+id); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("job %s ended, its progress key: %v, %v; want none", id, e, err)
	}
}

// TestWritesAProgress counts what a job's progress costs the bucket: a
// job that reports 0.25, 0.5 and 0.75, each after the last was read back
// (so a second apart at least), writes three progress reports and one
// purge, beside its end; a job that reports nothing writes none
// (TestWritesAJob).
func TestWritesAProgress(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	ctx := context.Background()
	s, err := c.js.Stream(ctx, "KV_jobs")
	if err != nil {
		t.Fatal(err)
	}
	last := func() uint64 {
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	consume(t, r)
	before := last()
	start := time.Now()
	jobstest.CheckProgress(t, r)
	took := time.Since(start)
	writes := last() - before
	t.Logf("a job of 3 progress reports over %v: %d writes to the bucket (3 reports, 1 purge, 1 end)", took.Round(time.Millisecond), writes)
	if writes != 5 {
		t.Fatalf("%d writes to the bucket, want 5: 3 reports, their purge, the job's end", writes)
	}
	if took < 2*jobs.ProgressEvery {
		t.Fatalf("3 reports written in %v: faster than one a second", took)
	}
}

package memjobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/memjobs"
)

// BenchmarkSubmitFullStore: a submit to a store at its bound of 10,000
// records (crewd's default in memory), every one finished: it evicts the
// oldest and files the new one, reading no other record.
func BenchmarkSubmitFullStore(b *testing.B) {
	pool, err := crew.New(crew.WithWorkers(4), crew.WithQueueSize(1024))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	const records = 10000
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(records, time.Hour, nil, nil), Kinds: jobstest.Kinds(), DefaultTimeout: time.Second, MaxTimeout: time.Minute}
	ctx := context.Background()
	submit := func() {
		for {
			if _, err := r.Submit(ctx, jobstest.Factorial(1)); err == nil {
				return
			}
			time.Sleep(time.Millisecond) // the pool's queue full: let it drain
		}
	}
	for range records {
		submit()
	}
	b.ResetTimer()
	for b.Loop() {
		submit()
	}
}

package memjobs_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/memjobs"
)

// ChargeArgs charges a card; the bank is down for its first run.
type ChargeArgs struct {
	Cents int `json:"cents"`
}

func (ChargeArgs) Kind() string { return "charge" }

// A job that failed is listed among the failed ones (the dead letters),
// and Retry runs it again under its id.
func ExampleRunner_Retry() {
	pool, _ := crew.New(crew.WithWorkers(1))
	defer pool.Close()
	var kinds jobs.Kinds
	bankDown := true
	_ = jobs.Register(&kinds, func(_ context.Context, a ChargeArgs) (int, error) {
		if bankDown {
			return 0, errors.New("bank down")
		}
		return a.Cents, nil
	})
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: &kinds, DefaultTimeout: time.Second, MaxTimeout: time.Minute}
	ctx := context.Background()
	spec, _ := jobs.NewSpec(ChargeArgs{Cents: 250})
	rec, _ := r.Submit(ctx, spec)
	await(r, rec.ID)

	dead, _ := r.List(ctx, jobs.Query{State: jobs.Failed})
	fmt.Println(len(dead.Jobs), dead.Jobs[0].Error)
	bankDown = false
	if _, err := r.Retry(ctx, rec.ID); err != nil {
		fmt.Println(err)
	}
	rec = await(r, rec.ID)
	fmt.Println(rec.State, string(rec.Result), rec.Retries, rec.Errors[0].Error)
	counts, _ := r.Counts(ctx)
	fmt.Println(counts)
	// Output:
	// 1 bank down
	// succeeded 250 1 bank down
	// map[succeeded:1]
}

// await waits for job id to end.
func await(r *memjobs.Runner, id string) jobs.Record {
	for {
		if rec, _ := r.Get(context.Background(), id); rec.State.Terminal() {
			return rec
		}
		time.Sleep(time.Millisecond)
	}
}

package jobs_test

import (
	"context"
	"fmt"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/memjobs"
)

// Import reads rows in; its run reports how far it is.
type Import struct {
	Rows int `json:"rows"`
}

func (Import) Kind() string { return "import" }

// A running job reports its progress, and a client reads the latest in
// its record; outside a run, Progress says there is none to keep.
func ExampleProgress() {
	pool, _ := crew.New(crew.WithWorkers(1))
	defer pool.Close()
	var kinds jobs.Kinds
	half := make(chan struct{})
	_ = jobs.Register(&kinds, func(ctx context.Context, a Import) (int, error) {
		for row := range a.Rows {
			if row == a.Rows/2 {
				_ = jobs.Progress(ctx, float64(row)/float64(a.Rows), fmt.Sprintf("%d of %d rows", row, a.Rows))
				<-half // the client reads it meanwhile
			}
		}
		return a.Rows, nil
	})
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: &kinds, DefaultTimeout: time.Second, MaxTimeout: time.Minute}
	ctx := context.Background()
	spec, _ := jobs.NewSpec(Import{Rows: 1000})
	rec, _ := r.Submit(ctx, spec)
	for rec.Progress == nil {
		time.Sleep(time.Millisecond)
		rec, _ = r.Get(ctx, rec.ID)
	}
	fmt.Println(rec.State, rec.Progress.Fraction, rec.Progress.Note)
	close(half)
	for !rec.State.Terminal() {
		time.Sleep(time.Millisecond)
		rec, _ = r.Get(ctx, rec.ID)
	}
	fmt.Println(rec.State, rec.Progress == nil)
	fmt.Println(jobs.Progress(ctx, 1, "done"))
	// Output:
	// running 0.5 500 of 1000 rows
	// succeeded true
	// no progress kept here: not in a job's run, or the run has ended
}

package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/memjobs"
)

// Shrink makes an image smaller; Album gathers the sizes of its images.
type Shrink struct {
	Width int `json:"width"`
}

func (Shrink) Kind() string { return "shrink" }

type Album struct{}

func (Album) Kind() string { return "album" }

// A job waits for its parents, then reads their results; a job whose
// parent is unknown is refused.
func ExampleParentResult() {
	pool, _ := crew.New(crew.WithWorkers(2))
	defer pool.Close()
	var kinds jobs.Kinds
	_ = jobs.Register(&kinds, func(_ context.Context, a Shrink) (int, error) { return a.Width / 2, nil })
	_ = jobs.Register(&kinds, func(ctx context.Context, _ Album) (int, error) {
		total := 0
		for _, id := range jobs.InfoOf(ctx).After {
			width, err := jobs.ParentResult[int](ctx, id)
			if err != nil {
				return 0, err
			}
			total += width
		}
		return total, nil
	})
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: &kinds, DefaultTimeout: time.Second, MaxTimeout: time.Minute}
	ctx := context.Background()
	var images []string
	for _, w := range []int{800, 1200} {
		spec, _ := jobs.NewSpec(Shrink{Width: w})
		rec, _ := r.Submit(ctx, spec)
		images = append(images, rec.ID)
	}
	album, _ := jobs.NewSpec(Album{})
	album.After = images
	rec, _ := r.Submit(ctx, album)
	for !rec.State.Terminal() {
		time.Sleep(time.Millisecond)
		rec, _ = r.Get(ctx, rec.ID)
	}
	fmt.Println(rec.State, string(rec.Result))
	album.After = []string{jobs.NewID()}
	_, err := r.Submit(ctx, album)
	fmt.Println(err != nil)
	// Output:
	// succeeded 1000
	// true
}

// Report is a batch's callback: it counts its members' ends.
type Report struct{}

func (Report) Kind() string { return "report" }

// A batch grows while its callback waits: the callback is a job after the
// members, even on failure, and takes more members with AddAfter until it
// is released.
func ExampleParentAdder() {
	pool, _ := crew.New(crew.WithWorkers(2))
	defer pool.Close()
	var kinds jobs.Kinds
	gate := make(chan struct{})
	_ = jobs.Register(&kinds, func(_ context.Context, a Shrink) (int, error) {
		<-gate // the first member runs until the batch is complete
		return a.Width / 2, nil
	})
	_ = jobs.Register(&kinds, func(ctx context.Context, _ Report) (jobs.Counts, error) { return jobs.ParentEnds(ctx) })
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: &kinds, DefaultTimeout: time.Second, MaxTimeout: time.Minute}
	ctx := context.Background()
	submit := func(spec jobs.Spec) string {
		rec, _ := r.Submit(ctx, spec)
		return rec.ID
	}
	first, _ := jobs.NewSpec(Shrink{Width: 800})
	callback, _ := jobs.NewSpec(Report{})
	callback.After, callback.EvenOnFailure = []string{submit(first)}, true
	id := submit(callback)
	var adder jobs.ParentAdder = r
	for _, w := range []int{1200, 640} {
		member, _ := jobs.NewSpec(Shrink{Width: w})
		rec, err := adder.AddAfter(ctx, id, submit(member))
		fmt.Println(rec.State, len(rec.After), err)
	}
	close(gate)
	rec, _ := r.Get(ctx, id)
	for !rec.State.Terminal() {
		time.Sleep(time.Millisecond)
		rec, _ = r.Get(ctx, id)
	}
	fmt.Println(rec.State, string(rec.Result))
	_, err := adder.AddAfter(ctx, id, submit(first))
	fmt.Println(errors.Is(err, jobs.ErrNotWaiting))
	// Output:
	// waiting 2 <nil>
	// waiting 3 <nil>
	// succeeded {"succeeded":3}
	// true
}

package jobstest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// ProgressArgs reports each of Steps in turn (jobs.Progress, the note
// "step <n>"), and after each waits for its test to let it go on
// (CheckProgress), the gates named Gate. It fails if a bad report is not
// refused.
type ProgressArgs struct {
	Steps []float64 `json:"steps"`
	Gate  string    `json:"gate"`
}

func (ProgressArgs) Kind() string { return "progress" }

// gates are the channels progress jobs wait on, by name.
var gates sync.Map

func gate(name string) chan struct{} {
	c, _ := gates.LoadOrStore(name, make(chan struct{}))
	return c.(chan struct{})
}

// runProgress is the progress kind's function.
func runProgress(ctx context.Context, a ProgressArgs) (int, error) {
	for _, bad := range []float64{math.NaN(), -1, 2, math.Inf(1)} {
		if err := jobs.Progress(ctx, bad, "bad"); !errors.Is(err, jobs.ErrProgressRange) {
			return 0, fmt.Errorf("progress %v: %v, want ErrProgressRange", bad, err)
		}
	}
	next := gate(a.Gate)
	for i, f := range a.Steps {
		if err := jobs.Progress(ctx, f, fmt.Sprintf("step %d", i+1)); err != nil {
			return 0, err
		}
		select {
		case <-next:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return len(a.Steps), nil
}

// CheckProgress checks that a job's progress is read back while it runs:
// a job reports 0.25, 0.5 and 0.75, each read back through r.Get before
// the job goes on to the next, then succeeds, and its record holds no
// progress once it has ended. It returns the job's id, for the store's
// own checks of what its progress left.
func CheckProgress(t *testing.T, r jobs.Runner) string {
	t.Helper()
	ctx := context.Background()
	name := jobs.NewID()
	defer gates.Delete(name)
	steps := []float64{0.25, 0.5, 0.75}
	rec, err := r.Submit(ctx, Timed(spec(ProgressArgs{Steps: steps, Gate: name}), time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range steps {
		note := fmt.Sprintf("step %d", i+1)
		var got jobs.Record
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err = r.Get(ctx, rec.ID)
			if err == nil && got.State == jobs.Running && got.Progress != nil && got.Progress.Fraction == f {
				break
			}
			if err == nil && got.State.Terminal() || time.Now().After(deadline) {
				t.Fatalf("job %s: %+v (progress %+v), %v; want running at %v", rec.ID, got, got.Progress, err, f)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if p := got.Progress; p.Note != note || p.At.IsZero() || time.Since(p.At) > time.Minute {
			t.Fatalf("job %s's progress: %+v, want %v %q reported just now", rec.ID, p, f, note)
		}
		select {
		case gate(name) <- struct{}{}:
		case <-time.After(10 * time.Second):
			t.Fatalf("job %s did not wait after its step %d", rec.ID, i+1)
		}
	}
	waitFor(t, r, rec.ID, func(s jobs.State) bool { return s.Terminal() })
	got, err := r.Get(ctx, rec.ID)
	if err != nil || got.State != jobs.Succeeded || got.Progress != nil {
		t.Fatalf("job %s ended: %+v (progress %+v), %v; want succeeded, no progress", rec.ID, got, got.Progress, err)
	}
	return rec.ID
}

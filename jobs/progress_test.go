package jobs_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew/jobs"
)

// writes is a store's writes of one run's progress, with their times.
type writes struct {
	mu    sync.Mutex
	start time.Time
	got   []jobs.ProgressReport
	at    []time.Duration
}

func (w *writes) write(p jobs.ProgressReport) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, p)
	w.at = append(w.at, time.Since(w.start))
}

func (w *writes) n() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.got)
}

func (w *writes) last() jobs.ProgressReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got[len(w.got)-1]
}

// TestProgressCoalesced: a run's first report is written at once; the
// hundred it makes within the next second are one write, at the second's
// end, of the last of them; a report a second or more after the latest
// write is written at once again.
func TestProgressCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &writes{start: time.Now()}
		pw := jobs.NewProgressWriter(w.write)
		ctx := jobs.WithProgress(context.Background(), pw)
		if err := jobs.Progress(ctx, 0, "start"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if w.n() != 1 || w.at[0] != 0 {
			t.Fatalf("the first report: %d writes at %v, want 1 at once", w.n(), w.at)
		}
		for i := 1; i <= 100; i++ {
			time.Sleep(9 * time.Millisecond)
			if err := jobs.Progress(ctx, float64(i)/100, "step"); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if w.n() != 1 {
			t.Fatalf("100 reports within the second after a write: %d writes before its end, want none", w.n()-1)
		}
		time.Sleep(time.Second - 900*time.Millisecond)
		synctest.Wait()
		if w.n() != 2 || w.at[1] != time.Second || w.last().Fraction != 1 {
			t.Fatalf("at the second's end: writes %+v at %v, want a second write of 1 at 1s", w.got, w.at)
		}
		time.Sleep(5 * time.Second)
		if w.n() != 2 {
			t.Fatalf("no report since, yet %d writes", w.n())
		}
		if err := jobs.Progress(ctx, 0.5, "later"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if w.n() != 3 || w.at[2] != 6*time.Second || w.last().Note != "later" {
			t.Fatalf("a report long after the last write: %+v at %v, want written at once", w.got, w.at)
		}
		if !pw.Stop() {
			t.Fatal("Stop says nothing was written")
		}
	})
}

// TestProgressNothingAfterTheEnd: a report waiting for its second when the
// run ends is dropped, a write under way is waited for, and a report after
// the end is ErrNoProgress; no timer or goroutine is left.
func TestProgressNothingAfterTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		w := &writes{start: time.Now()}
		pw := jobs.NewProgressWriter(func(p jobs.ProgressReport) {
			<-release // a store slow to answer
			w.write(p)
		})
		ctx := jobs.WithProgress(context.Background(), pw)
		_ = jobs.Progress(ctx, 0.1, "") // written at once, slowly
		synctest.Wait()
		_ = jobs.Progress(ctx, 0.2, "") // waits for the write and its second
		stopped := make(chan bool)
		go func() { stopped <- pw.Stop() }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Stop returned with a write under way")
		default:
		}
		close(release)
		if !<-stopped {
			t.Fatal("Stop says nothing was written")
		}
		if err := jobs.Progress(ctx, 0.3, ""); !errors.Is(err, jobs.ErrNoProgress) {
			t.Fatalf("a report after the end: %v, want ErrNoProgress", err)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if w.n() != 1 || w.last().Fraction != 0.1 {
			t.Fatalf("writes %+v, want the first report's alone", w.got)
		}
		if fresh := jobs.NewProgressWriter(w.write); fresh.Stop() {
			t.Fatal("a writer that wrote nothing says it wrote")
		}
	})
}

// TestProgressBadReports: a fraction out of range is ErrProgressRange
// whatever the context; a context of no run (nil, Background, another
// value's) is ErrNoProgress; a long note is cut.
func TestProgressBadReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &writes{start: time.Now()}
		pw := jobs.NewProgressWriter(w.write)
		defer pw.Stop()
		ctx := jobs.WithProgress(context.Background(), pw)
		for _, f := range []float64{math.NaN(), -1, 2, math.Inf(-1), 1.0000001} {
			if err := jobs.Progress(ctx, f, ""); !errors.Is(err, jobs.ErrProgressRange) {
				t.Errorf("fraction %v: %v, want ErrProgressRange", f, err)
			}
		}
		var none context.Context
		type other struct{}
		for name, c := range map[string]context.Context{
			"nil":        none,
			"background": context.Background(),
			"unrelated":  context.WithValue(context.Background(), other{}, "x"),
			"info only":  jobs.WithInfo(context.Background(), jobs.Info{ID: "0123456789abcdef"}),
		} {
			if err := jobs.Progress(c, 0.5, ""); !errors.Is(err, jobs.ErrNoProgress) {
				t.Errorf("%s context: %v, want ErrNoProgress", name, err)
			}
		}
		// The first report is written at once; the next two, made within
		// the second after it, are one write at that second's end.
		if err := jobs.Progress(ctx, 0, "start"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for _, f := range []float64{0, 1} {
			if err := jobs.Progress(ctx, f, strings.Repeat("é", 300)); err != nil {
				t.Fatalf("fraction %v: %v", f, err)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if w.n() != 2 {
			t.Fatalf("%d writes, want 2 (the third report replaced the second before its write)", w.n())
		}
		if p := w.last(); p.Fraction != 1 || len(p.Note) > jobs.MaxProgressNote || !strings.HasSuffix(p.Note, " …") {
			t.Fatalf("last write %+v (%d bytes), want 1 and a note cut to %d bytes", p, len(p.Note), jobs.MaxProgressNote)
		}
	})
}

package ui

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew/jobs"
)

// countingStore counts jobs queued as a test sets them.
type countingStore struct {
	jobs.Lister // nil: only Counts is called
	queued      atomic.Int64
}

func (c *countingStore) Counts(context.Context) (jobs.Counts, error) {
	return jobs.Counts{jobs.Queued: int(c.queued.Load()), jobs.Running: 3}, nil
}

// TestBacklogSampledAndItsTrend: Watch samples the jobs queued every 10 s
// (the test changes them between samples, by a sample's share of a rate),
// keeps an hour of them, and the trend reads the last five minutes: a
// backlog growing by 10 a minute, then shrinking by 30, then steady; no
// trend before a minute is sampled.
func TestBacklogSampledAndItsTrend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &countingStore{}
		u := &UI{Jobs: store}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { u.Watch(ctx); close(done) }()
		at := func(d time.Duration, perMinute int64) {
			for end := time.Now().Add(d); time.Now().Before(end); {
				time.Sleep(backlogEvery)
				store.queued.Add(perMinute * int64(backlogEvery) / int64(time.Minute))
			}
		}
		synctest.Wait()
		if c := backlogChartOf(u.backlog.snapshot()); c == nil || c.Trend != "" || c.Now != 0 {
			t.Fatalf("at the start: %+v, want one sample and no trend", c)
		}
		time.Sleep(backlogEvery / 2) // the changes fall between samples
		at(10*time.Minute, 60)       // +10 a sample
		synctest.Wait()
		c := backlogChartOf(u.backlog.snapshot())
		if !strings.HasPrefix(c.Trend, "growing by 60 a minute") || c.Now != 590 || c.Max != 590 {
			t.Errorf("growing: %+v", c)
		}
		at(10*time.Minute, -30)
		synctest.Wait()
		if c := backlogChartOf(u.backlog.snapshot()); !strings.HasPrefix(c.Trend, "shrinking by 30 a minute") || c.Now != 305 || c.Max != 600 {
			t.Errorf("shrinking: %+v", c)
		}
		at(time.Hour, 0)
		synctest.Wait()
		s := u.backlog.snapshot()
		if len(s) != backlogSamples || s[len(s)-1].at.Sub(s[0].at) != time.Hour-backlogEvery {
			t.Errorf("%d samples over %v, want an hour's %d", len(s), s[len(s)-1].at.Sub(s[0].at), backlogSamples)
		}
		if c := backlogChartOf(s); !strings.HasPrefix(c.Trend, "steady") || c.Max != 300 || c.Now != 300 {
			t.Errorf("steady: %+v", c)
		}
		if n := strings.Count(backlogChartOf(s).Points, ","); n != backlogSamples {
			t.Errorf("the line has %d points, want %d", n, backlogSamples)
		}
		stop()
		<-done
	})
}

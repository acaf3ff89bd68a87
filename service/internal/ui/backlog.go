package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
)

// The overview's backlog and its trend: the jobs waiting for a worker
// (queued), sampled every backlogEvery by Watch over the last hour
// (backlogSamples), from the store's counts (jsjobs: its index, no store
// scan), and drawn as a line. The trend is the change over the last five
// minutes sampled, as jobs a minute: growing, the workers do not keep up.

const (
	backlogEvery   = 10 * time.Second
	backlogSamples = int(time.Hour / backlogEvery)
	trendSpan      = 5 * time.Minute
)

// backlog is the samples, oldest first.
type backlog struct {
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	at      time.Time
	waiting int
}

// add keeps a sample, the oldest dropped past backlogSamples.
func (b *backlog) add(s sample) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.samples) == backlogSamples {
		b.samples = append(b.samples[:0], b.samples[1:]...)
	}
	b.samples = append(b.samples, s)
}

func (b *backlog) snapshot() []sample {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]sample(nil), b.samples...)
}

// Watch samples the backlog every 10 s until ctx ends, for the overview:
// without it the overview shows the backlog now and no trend. A count that
// fails is skipped.
func (u *UI) Watch(ctx context.Context) {
	lister, ok := u.Jobs.(jobs.Lister)
	if !ok {
		return
	}
	tick := time.NewTicker(backlogEvery)
	defer tick.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, backlogEvery)
		counts, err := lister.Counts(cctx)
		cancel()
		if err == nil {
			u.backlog.add(sample{at: time.Now(), waiting: counts[jobs.Queued]})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// backlogChart is the line of the samples and what it says.
type backlogChart struct {
	Points        string // the polyline's
	Width, Height int
	Max, Now      int
	Since         string // the first sample's time, HH:MM UTC
	Trend         string // "growing by 12 a minute", "shrinking by ...", "steady"; "" with under a minute sampled
}

const backlogWidth = 540

// backlogChartOf draws samples (none: nil), an hour's across the width.
func backlogChartOf(samples []sample) *backlogChart {
	if len(samples) == 0 {
		return nil
	}
	c := &backlogChart{Width: backlogWidth, Height: chartHeight, Now: samples[len(samples)-1].waiting,
		Since: samples[0].at.UTC().Format("15:04")}
	for _, s := range samples {
		c.Max = max(c.Max, s.waiting)
	}
	scale := max(c.Max, 1)
	var pts strings.Builder
	step := float64(backlogWidth) / float64(backlogSamples-1)
	// The newest at the right edge, as the ends chart's current minute.
	for i, s := range samples {
		fmt.Fprintf(&pts, "%.1f,%d ", float64(backlogWidth)-float64(len(samples)-1-i)*step, chartHeight-s.waiting*chartHeight/scale)
	}
	c.Points = strings.TrimSpace(pts.String())
	c.Trend = trendOf(samples)
	return c
}

// trendOf is the change of the backlog over the last trendSpan sampled
// (or all of it when shorter, from a minute), in jobs a minute.
func trendOf(samples []sample) string {
	last := samples[len(samples)-1]
	first := last
	for i := len(samples) - 1; i >= 0 && last.at.Sub(samples[i].at) <= trendSpan; i-- {
		first = samples[i]
	}
	span := last.at.Sub(first.at)
	if span < time.Minute {
		return ""
	}
	perMinute := float64(last.waiting-first.waiting) / span.Minutes()
	switch {
	case perMinute >= 1:
		return fmt.Sprintf("growing by %.0f a minute over the last %.0f minutes", perMinute, span.Minutes())
	case perMinute <= -1:
		return fmt.Sprintf("shrinking by %.0f a minute over the last %.0f minutes", -perMinute, span.Minutes())
	}
	return fmt.Sprintf("steady over the last %.0f minutes", span.Minutes())
}

package ui

import (
	"fmt"

	"github.com/crew-go/crew/jobs"
)

// The overview's chart: the jobs ended a minute over the last hour
// (jobs.EndCounter, from the store's index: no store scan), drawn on the
// server as SVG (the UI runs no script), succeeded below and failed (or
// timed out) stacked on them, a bar a minute.

// endsChart is the chart's geometry and its numbers.
type endsChart struct {
	Bars                []endsBar
	Width, Height       int
	Max                 int
	Succeeded, Failed   int // over the whole span
	Canceled            int
	First, Last         string // the first and the last minute, HH:MM UTC
	BarWidth, BarInside int    // a bar's step and its drawn width
}

type endsBar struct {
	X, OkY, OkH, BadY, BadH int
	Title                   string
}

const (
	chartHeight = 120
	barWidth    = 9
)

// chartOf draws ends, oldest first.
func chartOf(ends []jobs.Ends) endsChart {
	c := endsChart{Width: barWidth * len(ends), Height: chartHeight}
	for _, e := range ends {
		ok, bad := e.Counts[jobs.Succeeded], e.Counts[jobs.Failed]+e.Counts[jobs.TimedOut]
		c.Max = max(c.Max, ok+bad)
		c.Succeeded += ok
		c.Failed += bad
		c.Canceled += e.Counts[jobs.Canceled]
	}
	if len(ends) > 0 {
		c.First, c.Last = ends[0].Minute.UTC().Format("15:04"), ends[len(ends)-1].Minute.UTC().Format("15:04")
	}
	scale := max(c.Max, 1)
	for i, e := range ends {
		ok, bad := e.Counts[jobs.Succeeded], e.Counts[jobs.Failed]+e.Counts[jobs.TimedOut]
		okH, badH := ok*chartHeight/scale, bad*chartHeight/scale
		if ok > 0 && okH == 0 {
			okH = 1
		}
		if bad > 0 && badH == 0 {
			badH = 1
		}
		c.Bars = append(c.Bars, endsBar{
			X: i * barWidth, OkY: chartHeight - okH, OkH: okH, BadY: chartHeight - okH - badH, BadH: badH,
			Title: fmt.Sprintf("%s UTC: %d succeeded, %d failed or timed out, %d canceled", e.Minute.UTC().Format("15:04"), ok, bad, e.Counts[jobs.Canceled]),
		})
	}
	return c
}

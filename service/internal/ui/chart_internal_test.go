package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// TestChartOfEnds: bars scaled to the tallest minute, failed stacked on
// succeeded, a minute with a few still drawn, the hour's sums.
func TestChartOfEnds(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	c := chartOf([]jobs.Ends{
		{Minute: t0, Counts: jobs.Counts{jobs.Succeeded: 300, jobs.Failed: 60, jobs.TimedOut: 0}},
		{Minute: t0.Add(time.Minute), Counts: jobs.Counts{}},
		{Minute: t0.Add(2 * time.Minute), Counts: jobs.Counts{jobs.Succeeded: 1, jobs.TimedOut: 1, jobs.Canceled: 4}},
	})
	if c.Max != 360 || c.Succeeded != 301 || c.Failed != 61 || c.Canceled != 4 || c.First != "12:00" || c.Last != "12:02" || c.Width != 3*barWidth {
		t.Fatalf("chart %+v", c)
	}
	b := c.Bars[0]
	if b.OkH != 100 || b.BadH != 20 || b.OkY != chartHeight-100 || b.BadY != chartHeight-120 {
		t.Fatalf("the tallest minute: %+v", b)
	}
	if c.Bars[1].OkH != 0 || c.Bars[1].BadH != 0 {
		t.Fatalf("an empty minute: %+v", c.Bars[1])
	}
	if b := c.Bars[2]; b.OkH != 1 || b.BadH != 1 || b.X != 2*barWidth || !strings.Contains(b.Title, "12:02 UTC: 1 succeeded, 1 failed or timed out, 4 canceled") {
		t.Fatalf("a minute of few: %+v", b)
	}
}

package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/crew-go/crew"
)

// printStats prints the pool's counts after step, as a table.
func printStats(out io.Writer, step string, s crew.Stats) {
	w := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	fmt.Fprintf(w, "\n== %s\n", step)
	fmt.Fprintf(w, "workers\t%d alive, %d busy, bound %d\n", s.Workers, s.Busy, s.MaxWorkers)
	fmt.Fprintf(w, "queue\t%d of %d, %d submitters waiting, paused %v, closed %v\n", s.Queued, s.QueueCapacity, s.Waiting, s.Paused, s.Closed)
	fmt.Fprintf(w, "tasks\tsubmitted %d = succeeded %d + failed %d + panicked %d + timed out %d + canceled %d + dropped %d + rejected %d + in flight %d\n",
		s.Submitted, s.Succeeded, s.Failed, s.Panicked, s.TimedOut, s.Canceled, s.Dropped, s.Rejected, s.InFlight())
	w.Flush()
}

package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// table is the results as a Markdown table, with how they were measured.
func table(cfg config, res []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| handler | consumer | msgs/s | vs floor | held at most | p50 | p99 |\n|---|---|---:|---:|---:|---:|---:|\n")
	floor := map[time.Duration]float64{}
	for _, r := range res {
		if strings.HasPrefix(r.contender, "floor") {
			floor[r.work] = r.perSecond
		}
	}
	for _, r := range res {
		work := "empty"
		if r.work > 0 {
			work = r.work.String()
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.2fx | %d | %v | %v |\n", work, r.contender, r.perSecond,
			floor[r.work]/r.perSecond, r.held, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond))
	}
	fmt.Fprintf(&b, "\n%d messages per throughput run (20,000 with 1 ms handlers), concurrency %d, GOMAXPROCS %d, %s. "+
		"Held at most: the most messages delivered and not yet acked, as the server counted them every 5 ms (median over rounds).\n",
		cfg.messages, cfg.concurrency, runtime.GOMAXPROCS(0), runtime.Version())
	return b.String()
}

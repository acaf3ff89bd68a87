package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// report is one run: what was measured, on what, and how.
type report struct {
	Date       time.Time
	CPUs       int
	Go         string
	Versions   []string // the peers' modules
	Postgres   string
	Redis      string
	Command    string
	Load       [2]string // /proc/loadavg's 1-minute figure at the start and the end
	Options    options
	Throughput []throughputResult // every round's, in the order run
	Kill       []killResult
	Workflow   []workflowResult
}

func (r throughputResult) line() string {
	if r.Err != nil {
		return fmt.Sprintf("error: %v (%d of %d ended)", r.Err, r.Ended, r.Jobs)
	}
	return fmt.Sprintf("%8.0f jobs/s  (%d jobs in %v, enqueued in %v, the first ended after %v; enqueue to end p50 %v p99 %v)",
		r.Rate(), r.Ended, r.Elapsed.Round(time.Millisecond), r.Enqueue.Round(time.Millisecond), round(r.FirstEnd), round(r.P50), round(r.P99))
}

func (r killResult) line() string {
	s := fmt.Sprintf("lost %d, ran to the end twice %s, started again %d, last job %v after the restart for %v of remaining work (%d jobs)",
		r.Lost, orNA(r.Twice), r.Rerun, r.LastAfter.Round(10*time.Millisecond), r.Work.Round(10*time.Millisecond), r.Remaining)
	if r.Store != "" {
		s += "; " + r.Store
	}
	if r.Err != nil {
		s += "; error: " + r.Err.Error()
	}
	return s
}

func orNA(n int) string {
	if n < 0 {
		return "n/a"
	}
	return fmt.Sprint(n)
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// err joins the scenarios' errors.
func (rep report) err() error {
	var errs []error
	for _, r := range rep.Throughput {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s throughput: %w", r.System, r.Err))
		}
	}
	for _, r := range rep.Kill {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s kill: %w", r.System, r.Err))
		}
	}
	for _, r := range rep.Workflow {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("crew-jobs workflow: %w", r.Err))
		}
	}
	return errors.Join(errs...)
}

// markdown is the report as RESULTS.md has it.
func (rep report) markdown() string {
	var b strings.Builder
	o := rep.Options
	fmt.Fprintf(&b, "# Job systems, one run\n\n")
	fmt.Fprintf(&b, "%s, %d CPUs, %s; %s; %s; %s. `%s`", rep.Date.Format("2006-01-02 15:04 MST"), rep.CPUs, rep.Go,
		strings.Join(rep.Versions, ", "), rep.Redis, rep.Postgres, strings.TrimSpace(rep.Command))
	if rep.Load[0] != "" {
		fmt.Fprintf(&b, " Load average (1 min) %s at the start, %s at the end.", rep.Load[0], rep.Load[1])
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "Throughput: %d jobs of %v, %d producers, %d workers; jobs ended per second from the first enqueue to the last end, "+
		"jobs enqueued per second (from the first enqueue to the last enqueue's return), the time from the first enqueue to the first end (an idle worker's first fetch), and from a job's enqueue to its end (p50, p99).", o.Jobs, o.Sleep, o.Producers, o.Workers)
	if o.Kill {
		fmt.Fprintf(&b, " Kill: %d jobs of %v on %d workers, the worker process SIGKILLed %v after the first enqueue and started again at once; "+
			"lost: never ran to the end within %v of the restart (River: %v); twice: ran to the end more than once; started again: a run began more than once; "+
			"remaining work: the jobs not ended at the kill × %v ÷ %d.", o.KillJobs, o.KillSleep, o.Workers, o.KillAfter, o.KillBound, o.RiverBound, o.KillSleep, o.Workers)
	}
	if o.Rounds > 1 {
		fmt.Fprintf(&b, " The throughput test ran %d rounds, the systems in turn in each: jobs/s is the median round's (the lowest and highest in brackets), "+
			"and the other throughput columns are that round's.", o.Rounds)
	}
	b.WriteString("\n\n")
	rows := byRound(rep.Throughput)
	var base float64
	for _, row := range rows {
		if row.median.System == "asynq" && row.median.Err == nil {
			base = row.median.Rate()
		}
	}
	kills := map[string]killResult{}
	for _, k := range rep.Kill {
		kills[k.System] = k
	}
	b.WriteString("| system | jobs/s | ÷ asynq | enqueued/s | first end | p50 | p99 |")
	if o.Kill {
		b.WriteString(" kill: lost | not ended in the store | twice | started again | last job after restart | remaining work |")
	}
	b.WriteString("\n|---|---:|---:|---:|---:|---:|---:|")
	if o.Kill {
		b.WriteString("---:|---:|---:|---:|---:|---:|")
	}
	b.WriteString("\n")
	for _, row := range rows {
		r := row.median
		if r.Err != nil {
			fmt.Fprintf(&b, "| %s | error | | | | | |", r.System)
		} else {
			ratio := "-"
			if base > 0 {
				ratio = fmt.Sprintf("%.2f", r.Rate()/base)
			}
			rate := fmt.Sprintf("%.0f", r.Rate())
			if row.rounds > 1 {
				rate += fmt.Sprintf(" (%.0f..%.0f)", row.low, row.high)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %v | %v | %v |", r.System, rate, ratio, r.EnqueueRate(), round(r.FirstEnd), round(r.P50), round(r.P99))
		}
		if o.Kill {
			k, ok := kills[r.System]
			switch {
			case !ok:
				b.WriteString(" | | | | | |")
			case k.Err != nil:
				b.WriteString(" error | | | | | |")
			default:
				last := fmt.Sprintf("%.1f s", k.LastAfter.Seconds())
				if k.Lost > 0 {
					last += " (the last that ended)"
				}
				fmt.Fprintf(&b, " %d | %s | %s | %d | %s | %.1f s |", k.Lost, orNA(k.NotEnded), orNA(k.Twice), k.Rerun, last, k.Work.Seconds())
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\nSettings:\n\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "- %s: %s\n", row.median.System, row.median.Settings)
	}
	if o.Kill {
		b.WriteString("\nKill test, in detail:\n\n")
		for _, k := range rep.Kill {
			fmt.Fprintf(&b, "- %s: killed %.2f s after the first enqueue; %s\n", k.System, k.KillAfter.Seconds(), k.line())
		}
	}
	b.WriteString(workflowMarkdown(rep.Workflow, scenario{Jobs: o.Workflow, Sleep: o.Sleep, Producers: o.Producers, Workers: o.Workers}))
	if err := rep.err(); err != nil {
		fmt.Fprintf(&b, "\nErrors:\n\n```\n%v\n```\n", err)
	}
	return b.String()
}

// row is one system's throughput rounds: the median round (any failed
// round makes the row an error) and the lowest and highest rates.
type row struct {
	median    throughputResult
	low, high float64
	rounds    int
}

// byRound groups results by system, in the order the systems first ran.
func byRound(results []throughputResult) []row {
	var names []string
	by := map[string][]throughputResult{}
	for _, r := range results {
		if _, ok := by[r.System]; !ok {
			names = append(names, r.System)
		}
		by[r.System] = append(by[r.System], r)
	}
	rows := make([]row, 0, len(names))
	for _, name := range names {
		rs := by[name]
		if i := slices.IndexFunc(rs, func(r throughputResult) bool { return r.Err != nil }); i >= 0 {
			rows = append(rows, row{median: rs[i], rounds: len(rs)})
			continue
		}
		slices.SortFunc(rs, func(a, b throughputResult) int { return cmp.Compare(a.Rate(), b.Rate()) })
		rows = append(rows, row{median: rs[(len(rs)-1)/2], low: rs[0].Rate(), high: rs[len(rs)-1].Rate(), rounds: len(rs)})
	}
	return rows
}

// moduleVersions are the peers' module versions this binary was built
// with.
func moduleVersions() []string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	var out []string
	for _, d := range bi.Deps {
		switch d.Path {
		case "github.com/hibiken/asynq", "github.com/riverqueue/river", "github.com/jackc/pgx/v5":
			out = append(out, strings.TrimPrefix(d.Path, "github.com/")+" "+d.Version)
		}
	}
	return out
}

// loadAverage is the 1-minute load average, "" where there is none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func postgresVersion(ctx context.Context) string {
	bin, err := postgresBin()
	if err != nil {
		return "no postgres"
	}
	out, err := exec.CommandContext(ctx, bin+"/postgres", "--version").Output()
	if err != nil {
		return "postgres ?"
	}
	return strings.TrimSpace(string(out))
}

func redisVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "redis-server", "--version").Output()
	if err != nil {
		return "no redis-server"
	}
	// "Redis server v=7.0.15 sha=... malloc=... bits=64 build=..."
	for f := range strings.FieldsSeq(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return "Redis " + v
		}
	}
	return strings.TrimSpace(string(out))
}

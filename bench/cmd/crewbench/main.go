// Command crewbench runs crew's benchmark suite against its peers and
// writes RESULTS.md, the charts and the raw and benchstat outputs.
//
//	cd bench && go run ./cmd/crewbench          # full: 5 passes, ~25 minutes, rewrites bench/RESULTS.md and bench/charts
//	go run ./cmd/crewbench -quick               # seconds; writes to a temporary directory
//	go run ./cmd/crewbench -quick -out DIR      # quick, into DIR
//	go run ./cmd/crewbench -only S1,S4          # some scenarios (the report covers what is in DIR/raw)
//	go run ./cmd/crewbench -report              # redraw the report from DIR/raw without running
//
// It builds the package's test binary once and runs every scenario's
// benchmarks once per pass, so that each pass has every contender
// (interleaved in time); S3 runs each contender in its own process. The
// benchstat tables come from `go tool benchstat` (a tool of this module).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	f := parseFlags()
	if f.child != "" {
		exitIf(runS3Child(f.child, f.s3Tasks, f.s3Limit))
		return
	}
	d, err := newDriver(f)
	exitIf(err)
	runs := scenarios(d.s3Tasks, d.s3Limit)
	if !f.reportOnly {
		exitIf(d.runAll(runs, f.selected))
	}
	exitIf(d.render(runs))
	logf("wrote %s", filepath.Join(d.out, "RESULTS.md"))
	// The repository's README carries the headline; refresh it when the
	// results written are the committed ones.
	if filepath.Clean(d.out) == filepath.Clean(d.modDir) {
		readme := filepath.Join(d.modDir, "..", "README.md")
		exitIf(updateReadme(readme, filepath.Join(d.out, "RESULTS.md")))
		logf("updated %s", readme)
	}
}

// flags are crewbench's command line, their defaults resolved.
type flags struct {
	quick, reportOnly        bool
	passes, s3Tasks, s3Limit int
	out, only, child         string
}

func parseFlags() flags {
	var f flags
	flag.BoolVar(&f.quick, "quick", false, "a smoke run in seconds: 1 pass, few iterations, small S3 and S5")
	flag.IntVar(&f.passes, "passes", 0, "passes over every scenario (default 5, 1 with -quick)")
	flag.StringVar(&f.out, "out", "", "output directory (default: the bench module's directory, or a temporary one with -quick)")
	flag.StringVar(&f.only, "only", "", "comma-separated scenarios to run, e.g. S1,S3 (default all)")
	flag.BoolVar(&f.reportOnly, "report", false, "only redraw RESULTS.md and the charts from DIR/raw")
	flag.IntVar(&f.s3Tasks, "s3-tasks", 0, "S3 task count (default 1000000, 10000 with -quick)")
	flag.IntVar(&f.s3Limit, "s3-limit", 0, "S3 bound (default 50000, 500 with -quick)")
	flag.StringVar(&f.child, "s3-child", "", "internal: run S3 for this contender in this process and print its result")
	flag.Parse()
	if f.s3Tasks == 0 {
		f.s3Tasks = pick(f.quick, 10000, 1000000)
	}
	if f.s3Limit == 0 {
		f.s3Limit = pick(f.quick, 500, 50000)
	}
	if f.passes == 0 {
		f.passes = pick(f.quick, 1, 5)
	}
	return f
}

func pick(quick bool, q, full int) int {
	if quick {
		return q
	}
	return full
}

// selected says whether -only selects the scenario id.
func (f flags) selected(id string) bool {
	return f.only == "" || slices.Contains(strings.Split(strings.ToUpper(f.only), ","), id)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crewbench: "+format+"\n", args...)
}

// exitIf ends crewbench with err, if there is one.
func exitIf(err error) {
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
}

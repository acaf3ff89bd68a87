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
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/crew-go/crew/bench"
	"github.com/crew-go/crew/bench/internal/report"
)

func main() {
	var (
		quick      = flag.Bool("quick", false, "a smoke run in seconds: 1 pass, few iterations, small S3 and S5")
		passes     = flag.Int("passes", 0, "passes over every scenario (default 5, 1 with -quick)")
		out        = flag.String("out", "", "output directory (default: the bench module's directory, or a temporary one with -quick)")
		only       = flag.String("only", "", "comma-separated scenarios to run, e.g. S1,S3 (default all)")
		reportOnly = flag.Bool("report", false, "only redraw RESULTS.md and the charts from DIR/raw")
		s3Tasks    = flag.Int("s3-tasks", 0, "S3 task count (default 1000000, 10000 with -quick)")
		s3Limit    = flag.Int("s3-limit", 0, "S3 bound (default 50000, 500 with -quick)")
		child      = flag.String("s3-child", "", "internal: run S3 for this contender in this process and print its result")
	)
	flag.Parse()
	log := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "crewbench: "+format+"\n", args...)
	}

	if *s3Tasks == 0 {
		*s3Tasks = pick(*quick, 10000, 1000000)
	}
	if *s3Limit == 0 {
		*s3Limit = pick(*quick, 500, 50000)
	}
	if *child != "" {
		if err := runS3Child(*child, *s3Tasks, *s3Limit); err != nil {
			log("%v", err)
			os.Exit(1)
		}
		return
	}
	if *passes == 0 {
		*passes = pick(*quick, 1, 5)
	}

	modDir, err := moduleDir()
	if err != nil {
		log("%v", err)
		os.Exit(1)
	}
	if *out == "" {
		if *quick {
			*out, err = os.MkdirTemp("", "crewbench-")
			if err != nil {
				log("%v", err)
				os.Exit(1)
			}
		} else {
			*out = modDir
		}
	}
	*out, _ = filepath.Abs(*out)
	runs := scenarios(*s3Tasks, *s3Limit)
	selected := func(id string) bool {
		return *only == "" || slices.Contains(strings.Split(strings.ToUpper(*only), ","), id)
	}

	cfg := driver{
		quick: *quick, passes: *passes, out: *out, modDir: modDir,
		s3Tasks: *s3Tasks, s3Limit: *s3Limit, log: log,
	}
	if !*reportOnly {
		if err := cfg.runAll(runs, selected); err != nil {
			log("%v", err)
			os.Exit(1)
		}
	}
	if err := cfg.render(runs); err != nil {
		log("%v", err)
		os.Exit(1)
	}
	log("wrote %s", filepath.Join(*out, "RESULTS.md"))
	// The repository's README carries the headline; refresh it when the
	// results written are the committed ones.
	if filepath.Clean(*out) == filepath.Clean(modDir) {
		readme := filepath.Join(modDir, "..", "README.md")
		if err := updateReadme(readme, filepath.Join(*out, "RESULTS.md")); err != nil {
			log("%v", err)
			os.Exit(1)
		}
		log("updated %s", readme)
	}
}

// Markers around the part of the repository's README that a full run
// rewrites.
const (
	readmeStart = "<!-- bench:start (written by cd bench && go run ./cmd/crewbench) -->"
	readmeEnd   = "<!-- bench:end -->"
)

// updateReadme copies the headline table from RESULTS.md between the
// markers of the README, one heading level down, with a line pointing at
// the rest (where crew loses, the goals, each scenario) in RESULTS.md.
func updateReadme(readme, results string) error {
	res, err := os.ReadFile(results)
	if err != nil {
		return err
	}
	section, err := readmeSection(string(res))
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	text := string(doc)
	i, j := strings.Index(text, readmeStart), strings.Index(text, readmeEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q ... %q markers", readme, readmeStart, readmeEnd)
	}
	text = text[:i+len(readmeStart)] + "\n" + section + text[j:]
	return os.WriteFile(readme, []byte(text), 0o644)
}

// readmeSection is RESULTS.md's headline section, with links made
// relative to the repository's root, and a line pointing at the rest.
func readmeSection(results string) (string, error) {
	i := strings.Index(results, "## Headline")
	if i < 0 {
		return "", fmt.Errorf("RESULTS.md has no headline section")
	}
	j := strings.Index(results[i+1:], "\n## ")
	if j < 0 {
		return "", fmt.Errorf("RESULTS.md has nothing after its headline")
	}
	s := "#" + results[i:i+1+j+1]
	s = strings.ReplaceAll(s, "](charts/", "](bench/charts/")
	return s + readmeMore, nil
}

// readmeMore follows the headline in the README.
const readmeMore = "Where crew loses (every configuration a peer wins by more than 5 %), the goals met and missed, and each scenario's\n" +
	"figures are in [bench/RESULTS.md](bench/RESULTS.md).\n\n"

func pick(quick bool, q, full int) int {
	if quick {
		return q
	}
	return full
}

type driver struct {
	quick            bool
	passes           int
	out, modDir      string
	s3Tasks, s3Limit int
	log              func(string, ...any)
}

func moduleDir() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(b))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run crewbench inside the bench module (cd bench)")
	}
	dir := filepath.Dir(gomod)
	if _, err := os.Stat(filepath.Join(dir, "contenders.go")); err != nil {
		return "", fmt.Errorf("%s is not the bench module: run crewbench from bench/", dir)
	}
	return dir, nil
}

func (d *driver) runAll(runs []run, selected func(string) bool) error {
	rawDir := filepath.Join(d.out, "raw")
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "crewbench-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	testBin := filepath.Join(tmp, "bench.test")
	d.log("building the test binary")
	build := exec.Command("go", "test", "-c", "-o", testBin, ".")
	build.Dir, build.Stdout, build.Stderr = d.modDir, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go test -c: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	files := map[string]*os.File{}
	for _, r := range runs {
		if !selected(r.sc.ID) {
			continue
		}
		f, err := os.Create(filepath.Join(rawDir, r.sc.ID+".txt"))
		if err != nil {
			return err
		}
		defer f.Close()
		files[r.sc.ID] = f
		// Stamps, as benchmark-format configuration lines: each raw file
		// says when and against which crew it was measured, and how busy
		// the machine was when it started.
		fmt.Fprintf(f, "measured: %s\ncrew: %s\nloadavg-at-start: %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), crewVersion(d.modDir), loadAvg())
		if r.sc.ID == "S3" {
			fmt.Fprintf(f, "goos: %s\ngoarch: %s\npkg: github.com/crew-go/crew/bench\ncpu: %s\n", runtime.GOOS, runtime.GOARCH, cpuModel())
		}
	}
	start := time.Now()
	for pass := range d.passes {
		for _, r := range runs {
			f := files[r.sc.ID]
			if f == nil {
				continue
			}
			t0 := time.Now()
			if r.sc.ID == "S3" {
				err = d.runS3(self, f, pass)
			} else {
				err = d.runBench(testBin, f, r, pass)
			}
			if err != nil {
				return fmt.Errorf("pass %d %s: %w", pass+1, r.sc.ID, err)
			}
			d.log("pass %d/%d %s done in %v (total %v)", pass+1, d.passes, r.sc.ID, time.Since(t0).Round(time.Millisecond), time.Since(start).Round(time.Second))
		}
	}
	return nil
}

func (d *driver) runBench(testBin string, w io.Writer, r run, pass int) error {
	bt := r.benchtime
	if d.quick {
		bt = r.quickTime
	}
	args := []string{"-test.run=^$", "-test.bench=" + r.benchPattern(), "-test.benchmem", "-test.benchtime=" + bt, "-test.count=1", "-test.timeout=0"}
	if d.quick {
		args = append(args, "-quick")
	}
	cmd := exec.Command(testBin, args...)
	cmd.Dir = d.modDir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, os.Stderr
	if err := cmd.Run(); err != nil {
		os.Stderr.Write(buf.Bytes())
		return err
	}
	// Keep the header only from the first pass; benchstat reads the rest.
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		line := sc.Text()
		if line == "PASS" || strings.HasPrefix(line, "ok ") {
			continue
		}
		if pass > 0 && !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		fmt.Fprintln(w, line)
	}
	return sc.Err()
}

// runS3 runs each contender in its own process, starting the order at a
// different contender each pass.
func (d *driver) runS3(self string, w io.Writer, pass int) error {
	cs := bench.Contenders
	for i := range cs {
		c := cs[(i+pass)%len(cs)]
		cmd := exec.Command(self, "-s3-child", c.Name, fmt.Sprintf("-s3-tasks=%d", d.s3Tasks), fmt.Sprintf("-s3-limit=%d", d.s3Limit))
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		w.Write(b)
	}
	return nil
}

func runS3Child(name string, tasks, limit int) error {
	c, ok := bench.Lookup(name)
	if !ok {
		return fmt.Errorf("no contender %q", name)
	}
	r := bench.RunS3(c, tasks, limit, 10*time.Millisecond)
	fmt.Printf("BenchmarkS3SlowTasks/tasks=%d/limit=%d/lib=%s-%d\t1\t%d ns/op\t%d peak-rss-B\t%d total-alloc-B\t%d peak-goroutines\n",
		tasks, limit, name, runtime.GOMAXPROCS(0), r.Wall.Nanoseconds(), r.PeakRSS, r.TotalAlloc, r.PeakGoroutines)
	return nil
}

// render reads DIR/raw and writes the benchstat files, the charts and
// RESULTS.md.
func (d *driver) render(runs []run) error {
	rawDir := filepath.Join(d.out, "raw")
	chartDir := filepath.Join(d.out, "charts")
	statDir := filepath.Join(d.out, "benchstat")
	for _, dir := range []string{chartDir, statDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	set := report.NewSet()
	benchCPU := ""
	var scs []*report.Scenario
	charts := map[string][]string{}
	for _, r := range runs {
		raw := filepath.Join(rawDir, r.sc.ID+".txt")
		f, err := os.Open(raw)
		if err != nil {
			continue
		}
		set.Header = map[string]string{}
		err = set.Parse(f)
		f.Close()
		if c := set.Header["cpu"]; c != "" {
			benchCPU = c
		}
		if err != nil {
			return fmt.Errorf("%s: %w", raw, err)
		}
		if err := d.benchstat(raw, filepath.Join(statDir, r.sc.ID+".txt")); err != nil {
			d.log("benchstat %s: %v (skipped)", r.sc.ID, err)
		}
		for _, p := range r.parts() {
			p.Stamp = stamp(set.Header)
			scs = append(scs, p)
			files, err := report.Charts(set, p, chartDir)
			if err != nil {
				return fmt.Errorf("charts %s: %w", p.ID, err)
			}
			for _, f := range files {
				charts[p.ID] = append(charts[p.ID], "charts/"+f)
			}
		}
		for _, u := range r.extraUnits {
			name := strings.ToLower(r.sc.ID) + "-" + strings.TrimSuffix(u, "-B") + ".svg"
			if err := report.ExtraDotChart(set, r.sc, u, chartDir, name); err != nil {
				return fmt.Errorf("charts %s %s: %w", r.sc.ID, u, err)
			}
			charts[r.sc.ID] = append(charts[r.sc.ID], "charts/"+name)
		}
	}
	if len(scs) == 0 {
		return fmt.Errorf("no results in %s", rawDir)
	}
	mode := "full"
	if d.quick {
		mode = "quick"
	}
	meta := d.meta(mode, benchCPU)
	f, err := os.Create(filepath.Join(d.out, "RESULTS.md"))
	if err != nil {
		return err
	}
	defer f.Close()
	return report.Render(f, set, meta, scs, headlines(runs), charts)
}

func stamp(h map[string]string) string {
	var parts []string
	for _, k := range []string{"measured", "crew", "loadavg-at-start"} {
		if v := h[k]; v != "" {
			parts = append(parts, k+": "+v)
		}
	}
	return strings.Join(parts, "; ")
}

// benchstat writes `go tool benchstat -col /lib` of raw to path.
func (d *driver) benchstat(raw, path string) error {
	cmd := exec.Command("go", "tool", "benchstat", "-col", "/lib", raw)
	cmd.Dir = d.modDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return os.WriteFile(path, b, 0o644)
}

func (d *driver) meta(mode, benchCPU string) report.Meta {
	cmd := "cd bench && go run ./cmd/crewbench"
	if mode == "quick" {
		cmd += " -quick"
	}
	m := report.Meta{
		Title:   "crew benchmark results",
		Command: cmd,
		Date:    time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Mode:    mode,
		Passes:  d.passes,
		Machine: []string{
			"CPU: " + cpuModel(),
			fmt.Sprintf("cores (runtime.NumCPU): %d, GOMAXPROCS: %d%s", runtime.NumCPU(), runtime.GOMAXPROCS(0), cgroupQuota()),
			fmt.Sprintf("OS/arch: %s/%s; Go: %s", runtime.GOOS, runtime.GOARCH, runtime.Version()),
		},
	}
	if v := benchCPU; v != "" && v != cpuModel() {
		m.Machine = append(m.Machine, "benchmark header cpu: "+v)
	}
	m.Libraries = libraries(d.modDir)
	m.Notes = append(m.Notes, contenderTable(), batchTable(), fmt.Sprintf("S3 ran %d tasks with a bound of %d.", d.s3Tasks, d.s3Limit))
	return m
}

func contenderTable() string {
	var b strings.Builder
	b.WriteString("| contender | API and wait | queue |\n|---|---|---|\n")
	for _, c := range bench.Contenders {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, c.API, c.Queue)
	}
	b.WriteString("\nEvery contender runs one task value, built once (a WaitGroup.Done wrapper where the contender has no wait of its own); the bound is the scenario's worker count for all of them except `goroutines`. Queue sizes are 1024 wherever the library has a bounded, configurable queue.")
	return b.String()
}

func batchTable() string {
	var b strings.Builder
	b.WriteString("S2-map's contenders, each computing out[i] = Elem(in[i]) over a slice:\n\n| contender | API |\n|---|---|\n")
	for _, c := range bench.Batches {
		fmt.Fprintf(&b, "| %s | %s |\n", c.Name, c.API)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return "unknown (" + runtime.GOARCH + ")"
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func cgroupQuota() string {
	b, err := os.ReadFile("/sys/fs/cgroup/cpu.max")
	if err != nil {
		return ""
	}
	return fmt.Sprintf(", cgroup cpu.max: %s", strings.TrimSpace(string(b)))
}

// libraries lists the versions of the contenders' modules from the build
// info, and crew's commit.
func libraries(modDir string) []string {
	var out []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			switch dep.Path {
			case "github.com/alitto/pond/v2", "github.com/panjf2000/ants/v2", "github.com/sourcegraph/conc",
				"github.com/gammazero/workerpool", "golang.org/x/sync":
				out = append(out, dep.Path+" "+dep.Version)
			case "github.com/crew-go/crew":
				v := dep.Version
				if dep.Replace != nil {
					v = crewVersion(modDir)
				}
				out = append(out, "github.com/crew-go/crew "+v+" at report time (each scenario names the crew it measured)")
			}
		}
	}
	return out
}

// crewVersion names the local crew the bench module builds against
// (replace => ../): its commit, and whether the core had uncommitted
// changes.
func crewVersion(modDir string) string {
	rev, err := exec.Command("git", "-C", modDir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "(local ../)"
	}
	v := "(local, commit " + strings.TrimSpace(string(rev))
	if st, err := exec.Command("git", "-C", filepath.Dir(modDir), "status", "--porcelain", "--", ":(glob)*.go").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		v += " with uncommitted core changes"
	}
	return v + ")"
}

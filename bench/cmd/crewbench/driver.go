package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/crew-go/crew/bench"
)

// A driver runs the scenarios' passes into DIR/raw and renders the report
// from there.
type driver struct {
	quick            bool
	passes           int
	out, modDir      string
	s3Tasks, s3Limit int
	log              func(string, ...any)
}

// newDriver resolves where the run writes: -out, else the bench module's
// directory, or with -quick a new temporary directory.
func newDriver(f flags) (*driver, error) {
	modDir, err := moduleDir()
	if err != nil {
		return nil, err
	}
	out := f.out
	if out == "" {
		if f.quick {
			out, err = os.MkdirTemp("", "crewbench-")
			if err != nil {
				return nil, err
			}
		} else {
			out = modDir
		}
	}
	out, _ = filepath.Abs(out)
	return &driver{
		quick: f.quick, passes: f.passes, out: out, modDir: modDir,
		s3Tasks: f.s3Tasks, s3Limit: f.s3Limit, log: logf,
	}, nil
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

// runAll runs the selected scenarios' benchmarks, every scenario once a
// pass, into DIR/raw.
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
	testBin, err := d.buildTests(tmp)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	files, err := createRaw(rawDir, runs, selected, d.modDir)
	for _, f := range files {
		defer f.Close()
	}
	if err != nil {
		return err
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

// buildTests builds the bench package's test binary into dir, once for
// every pass.
func (d *driver) buildTests(dir string) (string, error) {
	testBin := filepath.Join(dir, "bench.test")
	d.log("building the test binary")
	build := exec.Command("go", "test", "-c", "-o", testBin, ".")
	build.Dir, build.Stdout, build.Stderr = d.modDir, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("go test -c: %w", err)
	}
	return testBin, nil
}

// createRaw creates the raw file of each selected scenario, stamped: each
// says when and against which crew it was measured, and how busy the
// machine was when it started (benchmark-format configuration lines).
func createRaw(rawDir string, runs []run, selected func(string) bool, modDir string) (map[string]*os.File, error) {
	files := map[string]*os.File{}
	for _, r := range runs {
		if !selected(r.sc.ID) {
			continue
		}
		f, err := os.Create(filepath.Join(rawDir, r.sc.ID+".txt"))
		if err != nil {
			return files, err
		}
		files[r.sc.ID] = f
		fmt.Fprintf(f, "measured: %s\ncrew: %s\nloadavg-at-start: %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), crewVersion(modDir), loadAvg())
		if r.sc.ID == "S3" {
			fmt.Fprintf(f, "goos: %s\ngoarch: %s\npkg: github.com/crew-go/crew/bench\ncpu: %s\n", runtime.GOOS, runtime.GOARCH, cpuModel())
		}
	}
	return files, nil
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

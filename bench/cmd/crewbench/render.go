package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/crew-go/crew/bench"
	"github.com/crew-go/crew/bench/internal/report"
)

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

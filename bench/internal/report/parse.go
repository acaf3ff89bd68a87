// Package report reads the output of the suite's benchmarks (the Go
// benchmark format, one file per scenario, many passes appended) and
// renders RESULTS.md and the SVG charts.
package report

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Key names one measured case: the scenario, its configuration without the
// contender (e.g. "workers=2/submitters=1") and the contender (lib=...).
type Key struct {
	Scenario string // "S1Overhead"
	Config   string
	Lib      string
}

// Stat is a summary of the samples of one key and unit, one per pass.
type Stat struct {
	Median, Min, Max float64
	N                int
}

// Set holds every sample read, in the order keys were first seen.
type Set struct {
	Keys    []Key
	samples map[Key]map[string][]float64
	// Header lines of the benchmark format (goos, goarch, pkg, cpu).
	Header map[string]string
}

// NewSet returns an empty Set.
func NewSet() *Set {
	return &Set{samples: map[Key]map[string][]float64{}, Header: map[string]string{}}
}

// Parse reads the Go benchmark format from r into s. Lines that are not
// results or headers are skipped.
func (s *Set) Parse(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "Benchmark") && !strings.Contains(k, " ") {
			s.Header[k] = strings.TrimSpace(v)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue
		}
		key, ok := parseName(f[0])
		if !ok {
			continue
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			s.Add(key, f[i+1], v)
		}
	}
	return sc.Err()
}

// Add records one sample.
func (s *Set) Add(k Key, unit string, v float64) {
	m, ok := s.samples[k]
	if !ok {
		m = map[string][]float64{}
		s.samples[k] = m
		s.Keys = append(s.Keys, k)
	}
	m[unit] = append(m[unit], v)
}

// parseName splits "BenchmarkS1Overhead/workers=2/lib=crew-go-2".
func parseName(name string) (Key, bool) {
	name = strings.TrimPrefix(name, "Benchmark")
	// The GOMAXPROCS suffix "-N" follows the last part.
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	parts := strings.Split(name, "/")
	if len(parts) < 2 {
		return Key{}, false
	}
	k := Key{Scenario: parts[0]}
	var cfg []string
	for _, p := range parts[1:] {
		if lib, ok := strings.CutPrefix(p, "lib="); ok {
			k.Lib = lib
		} else {
			cfg = append(cfg, p)
		}
	}
	k.Config = strings.Join(cfg, "/")
	return k, k.Lib != ""
}

// Get summarises the samples of k in unit.
func (s *Set) Get(k Key, unit string) (Stat, bool) {
	v := s.samples[k][unit]
	if len(v) == 0 {
		return Stat{}, false
	}
	v = slices.Clone(v)
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Stat{Median: med, Min: v[0], Max: v[len(v)-1], N: len(v)}, true
}

// Configs lists the configurations of scenario, in order of appearance.
func (s *Set) Configs(scenario string) []string {
	var out []string
	for _, k := range s.Keys {
		if k.Scenario == scenario && !slices.Contains(out, k.Config) {
			out = append(out, k.Config)
		}
	}
	return out
}

// Libs lists the contenders of scenario, in order of appearance.
func (s *Set) Libs(scenario string) []string {
	var out []string
	for _, k := range s.Keys {
		if k.Scenario == scenario && !slices.Contains(out, k.Lib) {
			out = append(out, k.Lib)
		}
	}
	return out
}

// Units lists the units measured for scenario, in order of appearance.
func (s *Set) Units(scenario string) []string {
	var out []string
	for _, k := range s.Keys {
		if k.Scenario != scenario {
			continue
		}
		for u := range s.samples[k] {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	slices.Sort(out)
	return out
}

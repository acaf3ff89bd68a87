package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// ants starts its package-level default pool at import: its goroutines are
// not leaks of this command.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}

// sample is the shape of the quick driver's raw output for a few scenarios.
const sampleS1 = `measured: 2026-01-02 03:04 UTC
crew: (local, commit abc1234)
loadavg-at-start: 0.10 0.20 0.30
goos: linux
goarch: amd64
pkg: github.com/crew-go/crew/bench
cpu: Test CPU
BenchmarkS1Overhead/workers=2/submitters=1/lib=crew-go-2         	 2000	  60.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkS1Overhead/workers=2/submitters=1/lib=chanpool-1024-2   	 2000	  45.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkS1Overhead/workers=2/submitters=1/lib=ants-2            	 2000	 400.0 ns/op	 0 B/op	 0 allocs/op
PASS
BenchmarkS1Overhead/workers=2/submitters=1/lib=crew-go-2         	 2000	  70.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkS1Overhead/workers=2/submitters=1/lib=chanpool-1024-2   	 2000	  44.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkS1Overhead/workers=2/submitters=1/lib=ants-2            	 2000	 420.0 ns/op	 0 B/op	 0 allocs/op
`

const sampleS5 = `BenchmarkS5SemVsPool/limit=10/inputs=1/lib=crew-group-shared-2   	 100	  1000 ns/op	 10 B/op	 1 allocs/op
BenchmarkS5SemVsPool/limit=10/inputs=1/lib=chansem-2   	 100	  800 ns/op	 20 B/op	 2 allocs/op
BenchmarkS5SemVsPool/limit=10/inputs=1/lib=chanpool-2   	 100	  9000 ns/op	 20 B/op	 2 allocs/op
BenchmarkS5SemVsPool/limit=10/inputs=100/lib=crew-group-shared-2   	 100	  100000 ns/op	 10 B/op	 1 allocs/op
BenchmarkS5SemVsPool/limit=10/inputs=100/lib=chansem-2   	 100	  150000 ns/op	 2000 B/op	 200 allocs/op
BenchmarkS5SemVsPool/limit=10/inputs=100/lib=chanpool-2   	 100	  120000 ns/op	 2000 B/op	 200 allocs/op
`

const sampleS3 = `BenchmarkS3SlowTasks/tasks=10000/limit=500/lib=crew-go-2	1	216000000 ns/op	11000000 peak-rss-B	1400000 total-alloc-B	504 peak-goroutines
BenchmarkS3SlowTasks/tasks=10000/limit=500/lib=goroutines-2	1	124000000 ns/op	34000000 peak-rss-B	6000000 total-alloc-B	4779 peak-goroutines
`

const sampleS2 = `BenchmarkS2CPU/batch=10/lib=sequential-2   	 100	  720 ns/op	 72 ns/task	 0 B/op	 0 allocs/op
BenchmarkS2CPU/batch=10/lib=crew-go-2   	 100	  2000 ns/op	 200 ns/task	 0 B/op	 0 allocs/op
BenchmarkS2Map/batch=10/lib=sequential-2   	 100	  720 ns/op	 72 ns/task	 0 B/op	 0 allocs/op
BenchmarkS2Map/batch=10/lib=crew-map-2   	 100	  756 ns/op	 75.6 ns/task	 100 B/op	 3 allocs/op
BenchmarkS2Map/batch=10/lib=crew-foreach-2   	 100	  864 ns/op	 86.4 ns/task	 50 B/op	 2 allocs/op
BenchmarkS2Map/batch=1024/lib=sequential-2   	 100	  73728 ns/op	 72 ns/task	 0 B/op	 0 allocs/op
BenchmarkS2Map/batch=1024/lib=floor-2   	 100	  38000 ns/op	 37 ns/task	 0 B/op	 0 allocs/op
BenchmarkS2Map/batch=1024/lib=crew-map-2   	 100	  40000 ns/op	 39 ns/task	 8000 B/op	 5 allocs/op
BenchmarkS2Map/batch=1024/lib=crew-foreach-2   	 100	  45000 ns/op	 44 ns/task	 50 B/op	 3 allocs/op
BenchmarkS2Map/batch=1024/lib=conc-map-2   	 100	  30000 ns/op	 29 ns/task	 8000 B/op	 4 allocs/op
BenchmarkS2Map/batch=4096/lib=sequential-2   	 100	  294912 ns/op	 72 ns/task	 0 B/op	 0 allocs/op
BenchmarkS2Map/batch=4096/lib=crew-map-2   	 100	  150000 ns/op	 36.6 ns/task	 32000 B/op	 20 allocs/op
BenchmarkS2Map/batch=4096/lib=crew-foreach-2   	 100	  160000 ns/op	 39 ns/task	 50 B/op	 3 allocs/op
`

const sampleS8 = `BenchmarkS8WarmBurst/pause=0s/bound=8/lib=floor-2	3	1000000 ns/op	1.04 x-ideal	1.06 x-ideal-max
BenchmarkS8WarmBurst/pause=0s/bound=8/lib=crew-go-2	3	1000000 ns/op	1.03 x-ideal	1.2 x-ideal-max
BenchmarkS8WarmBurst/pause=0s/bound=8/lib=ants-2	3	1000000 ns/op	1.04 x-ideal	1.1 x-ideal-max
BenchmarkS8WarmBurst/pause=0s/bound=64/lib=floor-2	3	1000000 ns/op	1.04 x-ideal	1.06 x-ideal-max
BenchmarkS8WarmBurst/pause=0s/bound=64/lib=crew-go-2	3	1000000 ns/op	1.1 x-ideal	1.2 x-ideal-max
BenchmarkS8WarmBurst/pause=0s/bound=64/lib=ants-2	3	1000000 ns/op	1.04 x-ideal	1.1 x-ideal-max
`

// TestRenderFromRaw runs the driver's report step on canned raw files:
// parsing, medians, ratios, the losses list, charts and benchstat are
// wired as the quick and full modes use them.
func TestRenderFromRaw(t *testing.T) {
	out := t.TempDir()
	raw := filepath.Join(out, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"S1.txt": sampleS1, "S2.txt": sampleS2, "S3.txt": sampleS3, "S5.txt": sampleS5, "S8.txt": sampleS8} {
		if err := os.WriteFile(filepath.Join(raw, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	modDir, err := moduleDir()
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{quick: true, passes: 2, out: out, modDir: modDir, s3Tasks: 10000, s3Limit: 500, log: t.Logf}
	if err := d.render(scenarios(10000, 500)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{
		"## S1 overhead of an empty task",
		"| **crew-go** | 65 ns | 60 ns..70 ns |", // median of two passes
		"| chanpool-1024 | 44.5 ns | 44 ns..45 ns | 0 B | 0 | 0.68× |",
		"- S1 workers=2/submitters=1: chanpool-1024 44.5 ns vs crew-go 65 ns (0.68×), 1 peer(s) ahead",
		// S1's goal against the channel pool, not met.
		"| workers=2/submitters=1 | crew-go | 65 ns | 44.5 ns | 1.46× | 1.20× | no |",
		"- S1: crew's `Go` at most 1.2× the channel pool (`chanpool-1024`) in every configuration. Met in 0 of 1 cells; not met: crew-go workers=2/submitters=1 1.46×.",
		"- S3 tasks=10000/limit=500: goroutines 124 ms vs crew-go 216 ms",
		"| ants | 6.31× |", // headline, one configuration
		"![S5](charts/s5-limit-10.svg)",
		"| limit=10/inputs=1 | 1 µs | 800 ns (chansem) | 1.25× | no |",
		"Met in 1 of 2 cells.",
		"Test CPU",
		"_measured: 2026-01-02 03:04 UTC; crew: (local, commit abc1234); loadavg-at-start: 0.10 0.20 0.30_",
		// S2: the sequential loop in a column of its own, in both parts.
		"| contender | ns/task | min..max | ns/op | B/op | allocs/op | ÷ crew-go | ÷ sequential |",
		"| **crew-go** | 200 ns | 200 ns..200 ns | 2 µs | 0 B | 0 | 1.00× | 2.78× |",
		"## S2-map Map and ForEach over a slice",
		"| contender | ns/op | min..max | ns/task | B/op | allocs/op | ÷ crew-map | ÷ sequential |",
		"| conc-map | 30 µs | 30 µs..30 µs | 29 ns | 7.81 KiB | 4 | 0.75× | 0.41× |",
		"![S2-map](charts/s2-map.svg)",
		// S2-map's goals, met and not.
		"| batch=10 | crew-map | 756 ns | 720 ns | 1.05× | 1.10× | yes |",
		"| batch=10 | crew-foreach | 864 ns | 720 ns | 1.20× | 1.10× | no |",
		"| batch=4096 | crew-map | 20 | 5 | 4.00× | 1.00× | no |",
		"| batch=4096 | crew-foreach | 3 | 3 | 1.00× | 1.00× | yes |",
		"at 10 elements. Met in 1 of 2 cells; not met: crew-foreach batch=10 1.20×.",
		"| batch=1024 | crew-map | 40 µs | 38 µs | 1.05× | 1.10× | yes |",
		"| batch=1024 | crew-foreach | 45 µs | 38 µs | 1.18× | 1.10× | no |",
		"(O(1) allocations per call). Met in 1 of 2 cells; not met: crew-map batch=4096 4.00×.",
		"- S2-map batch=1024: conc-map 30 µs vs crew-map 40 µs (0.75×), 1 peer(s) ahead",
		// S8: ratios to the ideal, the goal both ways, the floor apart.
		"| contender | x-ideal | min..max | x-ideal-max | ÷ crew-go | ÷ floor |",
		"| **crew-go** | 1.03× | 1.03×..1.03× | 1.20× | 1.00× | 0.99× |",
		"| pause=0s/bound=8 | crew-go | 1.03× | 1.05× | yes |",
		"| pause=0s/bound=64 | crew-go | 1.10× | 1.05× | no |",
		"- S8: crew's bursts at most 1.05× the ideal (one task's duration). Met in 1 of 2 cells; not met: crew-go pause=0s/bound=64 1.10×.",
		"- S8 pause=0s/bound=64: ants 1.04× vs crew-go 1.10× (0.95×), 1 peer(s) ahead",
		"| S8 burst ÷ crew-go |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
	}
	for _, unwanted := range []string{
		"S2 batch=10: sequential",       // the base is no peer
		"S2-map batch=1024: sequential", // idem
		"S8 pause=0s/bound=8: floor",
		"S2-map batch=100", // no such configuration, no goal either
	} {
		if strings.Contains(md, unwanted) {
			t.Errorf("RESULTS.md has %q", unwanted)
		}
	}
	if i, j := strings.Index(md, "## S2 batches"), strings.Index(md, "## S2-map"); i < 0 || j < i {
		t.Errorf("S2-map is not shown after S2")
	}
	for _, f := range []string{"s1.svg", "s2.svg", "s2-map.svg", "s3.svg", "s3-peak-rss.svg", "s5-limit-10.svg", "s8-pause-0s.svg"} {
		b, err := os.ReadFile(filepath.Join(out, "charts", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "<svg") {
			t.Errorf("%s is not an SVG", f)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
}

func TestReadmeSection(t *testing.T) {
	results := "# crew benchmark results\n\nintro\n\n## Headline: x\n\n| a |\n\n![S1](charts/s1.svg)\n\n## Where crew loses\n\n- S1 ...\n\n## S1 overhead\n\nrest\n"
	got, err := readmeSection(results)
	if err != nil {
		t.Fatal(err)
	}
	want := "### Headline: x\n\n| a |\n\n![S1](bench/charts/s1.svg)\n\n" + readmeMore
	if got != want {
		t.Fatalf("readmeSection =\n%q\nwant\n%q", got, want)
	}
	if _, err := readmeSection("no headline"); err == nil {
		t.Fatal("no error for results without a headline")
	}
	dir := t.TempDir()
	readme, res := dir+"/README.md", dir+"/RESULTS.md"
	if err := os.WriteFile(readme, []byte("top\n"+readmeStart+"\nold\n"+readmeEnd+"\nbottom\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(res, []byte(results), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateReadme(readme, res); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(readme)
	if string(b) != "top\n"+readmeStart+"\n"+want+readmeEnd+"\nbottom\n" {
		t.Fatalf("README after update:\n%s", b)
	}
}

func TestBenchPattern(t *testing.T) {
	for _, r := range scenarios(10, 5) {
		if r.sc.ID == "S2" {
			if got, want := r.benchPattern(), "^Benchmark(S2CPU|S2Map)$"; got != want {
				t.Fatalf("S2 pattern %q, want %q", got, want)
			}
			return
		}
	}
	t.Fatal("no S2")
}

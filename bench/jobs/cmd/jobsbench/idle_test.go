package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIdleCrewdCPU measures the CPU an idle crewd takes serving 8 named
// job queues (CREW_JOB_QUEUES=q1=2,...,q8=2), against crewd serving none,
// measured the same way in turn (A B A B ...): each crewd is built from
// this tree, started with its embedded NATS server on a data directory of
// its own, left idle for a settling time once /readyz answers 200, then
// its utime+stime (/proc/<pid>/stat) read over the measuring time, and
// reported as % of one core. It fails when the median of the 8 queues'
// runs is 1 % of a core or more. It takes minutes, so it runs only when
// asked:
//
//	JOBSBENCH_IDLE=1 go test -run '^TestIdleCrewdCPU$' -v -timeout 30m ./cmd/jobsbench
//
// JOBSBENCH_IDLE_PAIRS (2), JOBSBENCH_IDLE_SETTLE (10s) and
// JOBSBENCH_IDLE_FOR (60s) change the runs; JOBSBENCH_CREWD uses a crewd
// already built.
func TestIdleCrewdCPU(t *testing.T) {
	if os.Getenv("JOBSBENCH_IDLE") == "" {
		t.Skip("set JOBSBENCH_IDLE=1 to measure an idle crewd's CPU (minutes)")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: ", err)
	}
	pairs := envInt(t, "JOBSBENCH_IDLE_PAIRS", 2)
	settle := envDuration(t, "JOBSBENCH_IDLE_SETTLE", 10*time.Second)
	idle := envDuration(t, "JOBSBENCH_IDLE_FOR", 60*time.Second)
	ctx := t.Context()
	tmp := t.TempDir()
	bin := os.Getenv("JOBSBENCH_CREWD")
	if bin == "" {
		var err error
		if bin, err = buildCrewd(ctx, "", tmp); err != nil {
			t.Fatal(err)
		}
	}
	var queues []string
	for i := range 8 {
		queues = append(queues, queueName(i)+"=2")
	}
	runs := []struct {
		name   string
		env    string
		queues int // the queues GET /v1/queues lists, the default one included
	}{
		{"8 queues", "CREW_JOB_QUEUES=" + strings.Join(queues, ","), 9},
		{"no queues", "CREW_JOB_QUEUES=", 1},
	}
	tick := clockTicks()
	got := map[string][]float64{}
	for pair := range pairs {
		for _, r := range runs {
			pct, err := idleCPU(ctx, &crewdSystem{bin: bin, tmp: tmp, env: []string{r.env}}, r.queues, settle, idle, tick)
			if err != nil {
				t.Fatalf("%s, pair %d: %v", r.name, pair+1, err)
			}
			t.Logf("pair %d, crewd with %s: %.3f %% of a core over %v idle (load average %s)", pair+1, r.name, pct, idle, loadAverage())
			got[r.name] = append(got[r.name], pct)
		}
	}
	for _, r := range runs {
		t.Logf("crewd with %s: median %.3f %% of a core (runs %.3f)", r.name, median(got[r.name]), got[r.name])
	}
	if m := median(got["8 queues"]); m >= 1 {
		t.Errorf("an idle crewd serving 8 queues takes %.3f %% of a core, want under 1 %%", m)
	}
}

// idleCPU starts crewd as s, checks that it serves the queues it should,
// lets it settle, and returns its CPU over idle as % of one core.
func idleCPU(ctx context.Context, s *crewdSystem, queues int, settle, idle time.Duration, tick float64) (float64, error) {
	if err := s.Start(ctx, scenario{Name: "idle", Workers: 32}, nil); err != nil {
		return 0, err
	}
	defer s.Stop()
	if err := checkQueues(ctx, s, queues); err != nil {
		return 0, err
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	before, err := cpuTicks(pid)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	select {
	case <-time.After(idle):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	after, err := cpuTicks(pid)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / tick / time.Since(start).Seconds() * 100, nil
}

// checkQueues asks GET /v1/queues for the queues crewd serves: want of
// them, the default one included.
func checkQueues(ctx context.Context, s *crewdSystem, want int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/v1/queues", nil)
	if err != nil {
		return err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Queues []struct{ Name string }
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /v1/queues: %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("GET /v1/queues: %v", err)
	}
	if len(body.Queues) != want {
		return fmt.Errorf("GET /v1/queues: %d queues (%+v), want %d", len(body.Queues), body.Queues, want)
	}
	return nil
}

// cpuTicks is process pid's utime+stime, in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid ...: comm may hold spaces, so count from its
	// closing parenthesis; utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return utime + stime, nil
}

// clockTicks is the kernel's clock ticks a second (getconf CLK_TCK), 100
// where getconf does not say.
func clockTicks() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return 100
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || n <= 0 {
		return 100
	}
	return float64(n)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number, at least 1", name, v)
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a duration over 0", name, v)
	}
	return d
}

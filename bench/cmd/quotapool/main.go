// Command quotapool feeds CPU-bound tasks into a crew pool at a steady or
// Poisson rate (open loop: each task's latency counts from when it was
// due) and prints p50/p99/p99.9/max with the cgroup's throttling, to
// compare pool bounds under a container's CPU quota: GOMAXPROCS (crew's
// default, the quota rounded up, at least 2) against crew.CPUBound (the
// quota rounded down, at least 1). Unlike crewd, whose requests spend most
// of their CPU outside the pool (JSON, net/http), every cycle here is the
// pool's. run.sh builds it into a scratch image and runs the grid:
//
//	bench/cmd/quotapool/run.sh                 # 3 rounds x --cpus 0.5, 1 x default, quota; 30 s each
//	docker run --rm --cpus 0.5 quotapool:dev -rate 175 -iters 800 -duration 30s -poisson -workers quota
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew"
)

func main() {
	var o options
	flag.Float64Var(&o.rate, "rate", 100, "tasks per second")
	flag.IntVar(&o.iters, "iters", 800, "SHA-256 sums of 4 KiB per task (800: about 2 ms)")
	flag.StringVar(&o.workers, "workers", "", `the bound: a number, "quota" (crew.CPUBound) or empty (GOMAXPROCS)`)
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long to send")
	flag.BoolVar(&o.poisson, "poisson", false, "exponential gaps between tasks (mean 1/rate, a fixed seed) in place of even ones")
	calibrate := flag.Bool("calibrate", false, "print one task's time and exit")
	flag.Parse()
	if *calibrate {
		t := time.Now()
		for range 20 {
			work(o.iters)
		}
		fmt.Println(time.Since(t) / 20)
		return
	}
	r, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quotapool:", err)
		os.Exit(1)
	}
	fmt.Println(r)
	fmt.Println(throttling())
}

type options struct {
	rate     float64
	iters    int
	workers  string
	duration time.Duration
	poisson  bool
}

type result struct {
	quota                float64
	quotaOK              bool
	procs, bound, tasks  int
	elapsed              time.Duration
	p50, p99, p999, pmax time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("quota %v %v gomaxprocs %d bound %d tasks %d in %v p50 %v p99 %v p99.9 %v max %v",
		r.quota, r.quotaOK, r.procs, r.bound, r.tasks, r.elapsed.Round(time.Millisecond), r.p50, r.p99, r.p999, r.pmax)
}

var sink [32]byte

// work is one task's CPU: iters SHA-256 sums of 4 KiB.
func work(iters int) {
	var b [4096]byte
	for i := range iters {
		b[0] = byte(i)
		sink = sha256.Sum256(b[:])
	}
}

func run(o options) (result, error) {
	opts := []crew.Option{crew.WithQueueSize(1 << 16)}
	switch o.workers {
	case "":
	case "quota":
		opts = append(opts, crew.WithWorkers(crew.CPUBound()))
	default:
		n, err := strconv.Atoi(o.workers)
		if err != nil {
			return result{}, fmt.Errorf("-workers %q: want a number or quota", o.workers)
		}
		opts = append(opts, crew.WithWorkers(n))
	}
	pool, err := crew.New(opts...)
	if err != nil {
		return result{}, err
	}
	var (
		mu       sync.Mutex
		lat      []time.Duration
		interval = time.Duration(float64(time.Second) / o.rate)
		rng      = rand.New(rand.NewPCG(1, 2))
		at       time.Duration
		start    = time.Now()
	)
	for i := range int(o.duration.Seconds() * o.rate) {
		due := start.Add(time.Duration(i) * interval)
		if o.poisson {
			due = start.Add(at)
			at += time.Duration(rng.ExpFloat64() * float64(interval))
		}
		time.Sleep(time.Until(due))
		pool.Go(func() {
			work(o.iters)
			d := time.Since(due)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		})
	}
	bound := pool.Stats().MaxWorkers
	if err := pool.Shutdown(context.Background(), crew.Drain); err != nil {
		return result{}, err
	}
	r := result{procs: runtime.GOMAXPROCS(0), bound: bound, tasks: len(lat), elapsed: time.Since(start)}
	r.quota, r.quotaOK = crew.CPUQuota()
	if n := len(lat); n > 0 {
		slices.Sort(lat)
		r.p50, r.p99, r.p999, r.pmax = lat[n/2], lat[n*99/100], lat[n*999/1000], lat[n-1]
	}
	return r, nil
}

// throttling is the container's cpu.stat on one line (cgroup v2 or v1, as
// Docker mounts the container's own cgroup), or "" outside one.
func throttling() string {
	for _, f := range []string{"/sys/fs/cgroup/cpu.stat", "/sys/fs/cgroup/cpu,cpuacct/cpu.stat", "/sys/fs/cgroup/cpu/cpu.stat"} {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "nr_throttled") {
			return strings.Join(strings.Fields(string(b)), " ")
		}
	}
	return ""
}

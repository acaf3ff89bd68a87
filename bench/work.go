package bench

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Sink keeps results alive so that the compiler does not drop the work.
var Sink atomic.Uint64

func factorial(n uint64) uint64 {
	r := uint64(1)
	for i := uint64(2); i <= n; i++ {
		r *= i
	}
	return r
}

// CPUTask is about 72 ns of CPU on the reference machine: ten factorials
// of 20 over uint64 (S2's task).
//
//go:noinline
func CPUTask() uint64 {
	var s uint64
	for range 10 {
		s += factorial(20)
	}
	return s
}

// Elem is the element function of S2's Map and ForEach contenders: the S2
// task (CPUTask) on one input. Every contender computes out[i] =
// Elem(in[i]); CPUTask is not inlined, so the call is never dropped, and
// the result depends on the input, so that a test can check every
// element.
func Elem(x uint64) uint64 { return x ^ CPUTask() }

// APICallRounds is how many CPUTasks make S5's simulated API call.
const APICallRounds = 14

// APICall is S5's simulated API call: about 1 µs of CPU (14 CPUTasks). A
// spin rather than a sleep keeps the cells short and free of timer noise;
// the article's own call was close to free.
//
//go:noinline
func APICall(input uint64) uint64 {
	s := input
	for range APICallRounds {
		s += CPUTask()
	}
	return s
}

// S3Result is what one S3 child process measured.
type S3Result struct {
	Contender      string
	Tasks, Limit   int
	Wall           time.Duration
	PeakRSS        uint64 // bytes, VmHWM or getrusage maxrss
	TotalAlloc     uint64 // bytes, runtime.MemStats.TotalAlloc during the run
	PeakGoroutines int    // sampled every 500 µs
}

// RunS3 runs tasks tasks that each sleep for sleep, at most limit at once,
// on contender c, in this process. Call it in a fresh process: peak RSS is
// the process's.
func RunS3(c Contender, tasks, limit int, sleep time.Duration) S3Result {
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			if n := int64(runtime.NumGoroutine()); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()

	start := time.Now()
	r := c.New(Config{Workers: limit, Task: func() { time.Sleep(sleep) }})
	for range tasks {
		r.Go()
	}
	r.Wait()
	wall := time.Since(start)
	close(stop)
	<-sampled
	r.Close()

	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return S3Result{
		Contender:      c.Name,
		Tasks:          tasks,
		Limit:          limit,
		Wall:           wall,
		PeakRSS:        peakRSS(),
		TotalAlloc:     after.TotalAlloc - before.TotalAlloc,
		PeakGoroutines: int(peak.Load()),
	}
}

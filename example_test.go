package crew_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/crew-go/crew"
)

func ExamplePool() {
	pool, err := crew.New(crew.WithWorkers(4), crew.WithQueueSize(100))
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	sum := 0
	for i := 1; i <= 10; i++ {
		_ = pool.Go(func() { // a short task: no context, no allocation
			mu.Lock()
			sum += i
			mu.Unlock()
		})
	}
	// Drain runs everything queued, then stops the workers.
	if err := pool.Shutdown(context.Background(), crew.Drain); err != nil {
		panic(err)
	}
	fmt.Println(sum)
	// Output: 55
}

func ExampleTask() {
	pool, _ := crew.New()
	defer pool.Close()
	task, err := pool.Submit(context.Background(), func(ctx context.Context) error {
		select {
		case <-time.After(time.Minute):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, crew.Named("slow-call"), crew.Timeout(10*time.Millisecond))
	if err != nil {
		panic(err)
	}
	err = task.Wait()
	fmt.Println(task.Name(), task.State(), errors.Is(err, crew.ErrTimeout))
	// Output: slow-call timed_out true
}

func ExamplePanicError() {
	pool, _ := crew.New()
	defer pool.Close()
	task, _ := pool.Submit(context.Background(), func(context.Context) error {
		var m map[string]int
		m["x"] = 1 // panics
		return nil
	}, crew.Named("writer"))
	var pe *crew.PanicError
	if errors.As(task.Wait(), &pe) {
		fmt.Println(pe.Task, pe.Value, len(pe.Stack) > 0)
	}
	// Output: writer assignment to entry in nil map true
}

func ExampleStats() {
	pool, _ := crew.New(crew.WithWorkers(2), crew.WithQueueSize(8))
	defer pool.Close()
	_ = pool.Pause()
	for range 3 {
		_ = pool.Go(func() {})
	}
	s := pool.Stats()
	fmt.Printf("queued %d/%d, workers %d, submitted %d, in flight %d\n",
		s.Queued, s.QueueCapacity, s.Workers, s.Submitted, s.InFlight())
	// Output: queued 3/8, workers 0, submitted 3, in flight 3
}

func ExampleShutdownMode() {
	pool, _ := crew.New(crew.WithWorkers(1))
	release := make(chan struct{})
	running, _ := pool.Submit(context.Background(), func(ctx context.Context) error {
		close(release)
		<-ctx.Done() // honours cancellation
		return ctx.Err()
	})
	queued, _ := pool.Submit(context.Background(), func(context.Context) error { return nil })
	<-release

	// A pod's SIGTERM handler for a service whose clients retry: drop what
	// is queued, let running tasks go on, and stop hard before the
	// deadline (half-way here, as the deadline is shorter than twice the
	// stop grace) so that Shutdown returns by it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := pool.Shutdown(ctx, crew.SoftThenHard)
	fmt.Println(err) // the running task honoured its cancellation
	fmt.Println(running.State(), queued.State(), errors.Is(queued.Err(), crew.ErrNotRun))
	// Output:
	// <nil>
	// canceled dropped true
}

func ExampleState() {
	for _, s := range []crew.State{crew.Queued, crew.Running, crew.Succeeded, crew.TimedOut} {
		fmt.Println(s, s.Terminal())
	}
	// Output:
	// queued false
	// running false
	// succeeded true
	// timed_out true
}

func ExampleObservation() {
	var mu sync.Mutex
	var names []string
	pool, _ := crew.New(crew.WithWorkers(1), crew.WithObserver(func(o crew.Observation) {
		mu.Lock()
		names = append(names, o.Name+":"+o.State.String())
		mu.Unlock()
	}))
	_ = pool.Go(func() {}, crew.Named("resize-image"))
	_ = pool.Go(func() { panic("bad image") }, crew.Named("resize-image"))
	_ = pool.Shutdown(context.Background(), crew.Drain)
	fmt.Println(names)
	// Output: [resize-image:succeeded resize-image:panicked]
}

func ExampleOption() {
	_, err := crew.New(crew.WithWorkers(-1))
	fmt.Println(errors.Is(err, crew.ErrInvalidOption))
	fmt.Println(err)
	// Output:
	// true
	// crew: invalid option: workers -1, want >= 1
}

func ExampleTaskOption() {
	pool, _ := crew.New()
	defer pool.Close()
	err := pool.Go(func() {}, crew.Timeout(time.Second)) // short tasks cannot be interrupted
	fmt.Println(err)
	// Output: crew: invalid option: Timeout on a short task; use Submit
}

func ExamplePool_Resize() {
	pool, _ := crew.New(crew.WithWorkers(1))
	defer pool.Close()
	_ = pool.Resize(8)
	fmt.Println(pool.Stats().MaxWorkers, pool.Resize(0) != nil)
	// Output: 8 true
}

func ExampleMap() {
	pool, err := crew.New(crew.WithWorkers(4)) // at most 4 at once; GOMAXPROCS by default
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	squares, err := crew.Map(context.Background(), pool, []int{1, 2, 3, 4},
		func(_ context.Context, n int) (int, error) { return n * n, nil })
	fmt.Println(squares, err)
	// Output: [1 4 9 16] <nil>
}

func ExampleIndexError() {
	pool, _ := crew.New(crew.WithWorkers(2))
	defer pool.Close()
	err := crew.ForEach(context.Background(), pool, []string{"a", "", "c", ""},
		func(_ context.Context, s string) error {
			if s == "" {
				return errors.New("empty")
			}
			return nil
		}, crew.JoinErrors())
	var ie *crew.IndexError
	errors.As(err, &ie) // the first in input order
	fmt.Println(ie.Index, ie.Err)
	fmt.Println(err)
	// Output:
	// 1 empty
	// crew: element 1: empty
	// crew: element 3: empty
}

// ExampleCPUBound sizes a pool of CPU-bound tasks to the container's CPU
// quota rounded down (GOMAXPROCS rounds it up, and is never below 2).
func ExampleCPUBound() {
	pool, err := crew.New(crew.WithWorkers(crew.CPUBound()))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	sums, err := crew.Map(context.Background(), pool, []int{10, 20, 30}, func(_ context.Context, n int) (int, error) {
		return n * (n + 1) / 2, nil
	})
	fmt.Println(sums, err)
	// Output: [55 210 465] <nil>
}

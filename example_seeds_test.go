package crew_test

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/crew-go/crew"
)

// The batch of the semaphore-and-pool article: deactivate 100,000 users through
// a rate-limited external API, stopping at the first error. Limit keeps the
// API at 50 calls in flight whatever the pool's size.
func ExampleForEach_deactivateUsers() {
	pool, _ := crew.New(crew.WithWorkers(64))
	defer pool.Close()
	users := make([]int, 100_000)
	for i := range users {
		users[i] = i + 1
	}
	var calls atomic.Int64
	deactivate := func(ctx context.Context, id int) error {
		calls.Add(1)
		if id == 500 {
			return fmt.Errorf("user %d: api: 503 service unavailable", id)
		}
		return ctx.Err()
	}
	err := crew.ForEach(context.Background(), pool, users, deactivate, crew.Limit(50))
	fmt.Println(err)
	var ie *crew.IndexError
	if errors.As(err, &ie) {
		fmt.Println("failed at index", ie.Index)
	}
	fmt.Println(calls.Load() < int64(len(users))) // the rest never ran
	// Output:
	// crew: element 499: user 500: api: 503 service unavailable
	// failed at index 499
	// true
}

// The pipeline of the goroutine-pool survey: walk a tree, hash every file
// with bounded parallelism, collect the sums in walk order.
func ExampleMapSeq_md5Pipeline() {
	files := fstest.MapFS{
		"a.txt":     {Data: []byte("alpha")},
		"b/c.txt":   {Data: []byte("charlie")},
		"b/d/e.txt": {Data: []byte("echo")},
	}
	walk := func(yield func(string) bool) {
		_ = fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if !yield(path) {
				return fs.SkipAll
			}
			return nil
		})
	}
	pool, _ := crew.New(crew.WithWorkers(4))
	defer pool.Close()
	sums, err := crew.MapSeq(context.Background(), pool, walk, func(_ context.Context, path string) (string, error) {
		data, err := fs.ReadFile(files, path)
		return fmt.Sprintf("%x  %s", md5.Sum(data), path), err
	})
	if err != nil {
		panic(err)
	}
	for _, s := range sums {
		fmt.Println(s)
	}
	// Output:
	// 2c1743a391305fbf367df8e4f069f9f9  a.txt
	// bf779e0933a882808585d19455cd7937  b/c.txt
	// cbb11ed87dc8a95d81400c7f33c7c171  b/d/e.txt
}

// The online batch of the goapp worker-pool article: the sum of factorials of a
// list of numbers, one task per number, results summed in order.
func ExampleResults_sumOfFactorials() {
	pool, _ := crew.New()
	defer pool.Close()
	r, _ := crew.NewResults[uint64](context.Background(), pool)
	for _, n := range []uint64{5, 10, 15, 20} {
		_ = r.Go(func(context.Context) (uint64, error) { return factorial(n), nil })
	}
	fact, err := r.Wait()
	if err != nil {
		panic(err)
	}
	var sum uint64
	for _, f := range fact {
		sum += f
	}
	fmt.Println(fact, sum)
	// Output: [120 3628800 1307674368000 2432902008176640000] 2432903315854636920
}

func ExampleGroup() {
	// Three workers: the checks wait for each other (the first error stops
	// the rest), so they must run at once. On a pool of GOMAXPROCS workers a
	// one-CPU machine would run one check at a time and wait forever.
	pool, _ := crew.New(crew.WithWorkers(3))
	defer pool.Close()
	g, ctx := crew.NewGroup(context.Background(), pool)
	for _, name := range []string{"db", "cache", "queue"} {
		_ = g.Go(func() error {
			if name == "cache" {
				return errors.New("cache: connection refused")
			}
			<-ctx.Done() // the others stop at the first error
			return nil
		}, crew.Named("check-"+name))
	}
	fmt.Println(g.Wait())
	fmt.Println(context.Cause(ctx))
	// Output:
	// cache: connection refused
	// cache: connection refused
}

func ExampleGroupOption() {
	pool, _ := crew.New()
	defer pool.Close()
	g, _ := crew.NewGroup(context.Background(), pool, crew.JoinErrors(), crew.Limit(2))
	for i := range 3 {
		_ = g.Go(func() error { return fmt.Errorf("task %d failed", i) })
	}
	errs := g.Wait().(interface{ Unwrap() []error }).Unwrap()
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	slices.Sort(msgs)
	fmt.Println(msgs)
	// Output: [task 0 failed task 1 failed task 2 failed]
}

func ExampleStream() {
	pool, _ := crew.New(crew.WithWorkers(3))
	defer pool.Close()
	s, _ := crew.NewStream(context.Background(), pool, func(line string, err error) {
		fmt.Println(line, err)
	})
	for i, d := range []time.Duration{30, 10, 20} {
		_ = s.Go(func(context.Context) (string, error) {
			time.Sleep(d * time.Millisecond)
			return fmt.Sprintf("page %d", i), nil
		})
	}
	_ = s.Wait()
	// Output:
	// page 0 <nil>
	// page 1 <nil>
	// page 2 <nil>
}

func ExampleUnfinishedError() {
	pool, _ := crew.New(crew.WithWorkers(1))
	defer pool.Close()
	g, gctx := crew.NewGroup(context.Background(), pool)
	started := make(chan struct{}, 3)
	for range 3 {
		_ = g.Go(func() error { started <- struct{}{}; <-gctx.Done(); return nil })
	}
	<-started // one runs; two wait behind it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := g.WaitContext(ctx) // the article's total timeout for a batch
	var ue *crew.UnfinishedError
	fmt.Println(errors.As(err, &ue), ue.Running, ue.Queued, errors.Is(err, context.DeadlineExceeded))
	// Output: true 1 2 true
}

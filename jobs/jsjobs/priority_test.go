package jsjobs_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/natsjs"
)

// startArgs is a job that notes its start, its priority and its number.
type startArgs struct {
	P, N int
	For  jobs.Duration
}

func (startArgs) Kind() string { return "start" }

type starts struct {
	mu   sync.Mutex
	seen []startArgs
}

func (s *starts) kinds() *jobs.Kinds {
	ks := jobstest.Kinds()
	if err := jobs.Register(ks, func(ctx context.Context, a startArgs) (int, error) {
		s.mu.Lock()
		s.seen = append(s.seen, a)
		s.mu.Unlock()
		time.Sleep(time.Duration(a.For))
		return a.N, nil
	}); err != nil {
		panic(err)
	}
	return ks
}

func (s *starts) list() []startArgs {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

func startSpec(q string, p, n int, d time.Duration) jobs.Spec {
	spec, err := jobs.NewSpec(startArgs{P: p, N: n, For: jobs.Duration(d)})
	if err != nil {
		panic(err)
	}
	spec.Queue, spec.Priority = q, p
	return spec
}

// TestPrioritiesStartInOrder: 40 jobs of each priority, submitted lowest
// first to a queue no one serves yet, start highest first once a worker
// serves it, but for a few a sweep in flight took together at the
// boundary between two priorities (maxOvertaken); a job given no priority is
// of the default's (2), and its record says which it was given.
func TestPrioritiesStartInOrder(t *testing.T) {
	for _, q := range []string{jobs.DefaultQueue, "mail"} {
		t.Run(q, func(t *testing.T) {
			c := newCluster(t)
			var s starts
			cfg := jsConfig()
			cfg.Kinds = s.kinds()
			r := c.runner(t, cfg)
			closeRunner(t, r)
			ctx := context.Background()
			if err := r.SetQueue(ctx, jobs.Queue{Name: q}); err != nil {
				t.Fatal(err)
			}
			const each = 40
			var last jobs.Record
			for p := jobs.MaxPriority; p >= 1; p-- {
				for n := range each {
					spec := startSpec(q, p, n, 0)
					if p == jobs.DefaultPriority && n%2 == 0 {
						spec.Priority = 0 // the default
					}
					last = submit(t, r, spec)
				}
			}
			if got, err := r.Get(ctx, last.ID); err != nil || got.Spec == nil || got.Spec.Priority != 1 {
				t.Fatalf("a waiting job of priority 1: %+v, %v", got.Spec, err)
			}
			qs, err := r.Queues(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(qs, func(qi jobs.QueueInfo) bool { return qi.Name == q }); i < 0 || qs[i].Waiting != 4*each {
				t.Fatalf("queues %+v: want %s with %d waiting, its priorities together", qs, q, 4*each)
			}
			if q == jobs.DefaultQueue {
				src, err := r.Source(newWorkers(t, 1))
				if err != nil {
					t.Fatal(err)
				}
				runSource(t, src)
			} else {
				serve(t, r, q, 1)
			}
			outcomesReach(t, r, func(o jsjobs.Outcomes) bool { return o.Succeeded == 4*each })
			got := s.list()
			// A job of a lower priority may start before one of a higher
			// only when a sweep in flight held that one (natsjs's rule 5):
			// a few at the boundary between two priorities, never more.
			if late := overtaken(got); late > maxOvertaken {
				t.Fatalf("a job of a higher priority started after %d of a lower one (at most %d allowed): %v", late, maxOvertaken, got)
			}
			if len(got) != 4*each {
				t.Fatalf("%d starts", len(got))
			}
		})
	}
}

// maxOvertaken bounds the jobs of a lower priority that may start before
// one of a higher priority waiting with them: those a Source's sweeps in
// flight take together (its free slots plus its window, small here).
const maxOvertaken = 4

// overtaken is the most jobs of a lower priority that started before one
// of a higher priority, in the order got started.
func overtaken(got []startArgs) int {
	most := 0
	for i, a := range got {
		n := 0
		for _, b := range got[:i] {
			if b.P > a.P {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// TestPriorityOvertakesABacklog: with 5,000 jobs of priority 4 waiting and
// running two at a time, a job of priority 1 starts after at most the few
// the workers already held, not after the backlog.
func TestPriorityOvertakesABacklog(t *testing.T) {
	c := newCluster(t)
	var s starts
	cfg := jsConfig()
	cfg.Kinds = s.kinds()
	r := c.runner(t, cfg)
	closeRunner(t, r)
	ctx := context.Background()
	if err := r.SetQueue(ctx, jobs.Queue{Name: "bulk"}); err != nil {
		t.Fatal(err)
	}
	const backlog = 5000
	for n := range backlog {
		if _, err := r.Submit(ctx, startSpec("bulk", 4, n, time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	const workers = 2
	serve(t, r, "bulk", workers)
	outcomesReach(t, r, func(o jsjobs.Outcomes) bool { return o.Succeeded >= 100 })
	before := len(s.list())
	urgent := submit(t, r, startSpec("bulk", 1, 0, 0))
	eventually(t, r, urgent.ID, jobs.Succeeded)
	got := s.list()
	at := slices.IndexFunc(got, func(a startArgs) bool { return a.P == 1 })
	overtaken := at - before
	t.Logf("a job of priority 1 started %d starts after its submit, %d of priority 4 waiting behind it", overtaken, backlog-at)
	if at < 0 || overtaken > 16 {
		t.Fatalf("the job of priority 1 started %d starts after its submit: it must overtake the backlog", overtaken)
	}
}

// TestPriorityDueLaterAndRefused: a job of priority 1 due later runs in
// its priority once due; a priority out of range is refused naming the
// field, nothing stored.
func TestPriorityDueLaterAndRefused(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	consumeAll(t, r)
	spec := jobstest.Factorial(5)
	spec.Priority, spec.RunAt = 1, time.Now().Add(1500*time.Millisecond)
	rec := submit(t, r, spec)
	if rec.State != jobs.Scheduled {
		t.Fatalf("%+v", rec)
	}
	eventually(t, r, rec.ID, jobs.Succeeded)
	for _, p := range []int{-1, 5, 100} {
		spec := jobstest.Factorial(5)
		spec.Priority = p
		_, err := r.Submit(context.Background(), spec)
		var inv *jobs.InvalidError
		if !errors.As(err, &inv) || !contains(inv.Reason, `"priority"`) {
			t.Fatalf("priority %d: %v, want an *InvalidError naming it", p, err)
		}
	}
	counts, err := r.Counts(context.Background())
	if err != nil || counts[jobs.Succeeded] != 1 || len(counts) != 1 {
		t.Fatalf("counts %v, %v: a refused job must store nothing", counts, err)
	}
}

// consumeAll runs the default queue's jobs, every priority, on r.
func consumeAll(t *testing.T, r *jsjobs.Runner, opts ...natsjs.Option) *natsjs.Source {
	t.Helper()
	src, err := r.Source(newWorkers(t, 2), opts...)
	if err != nil {
		t.Fatal(err)
	}
	runSource(t, src)
	return src
}

// newWorkers is a pool of n workers, shut down when the test ends (after
// the sources on it, made later).
func newWorkers(t *testing.T, n int) *crew.Pool {
	t.Helper()
	pool, err := crew.New(crew.WithWorkers(n))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = pool.Shutdown(ctx, crew.Hard)
	})
	return pool
}

// runSource runs src until the test ends.
func runSource(t *testing.T, src *natsjs.Source) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- src.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = src.Shutdown(ctx)
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

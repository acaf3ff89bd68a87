package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go/jetstream"
)

// The workflow measurement: the crew jobs library's dependencies
// (jobs.Spec.After) against the same work as plain jobs. A fan-out/fan-in
// of steps jobs: one root, steps-2 after it, and a join after all of
// those, each a sleep of sc.Sleep, on crew-jobs; then the same steps as
// plain jobs, submitted by the same producers. What it costs: the wall
// time from the first submit to the last end, and the writes a step (the
// messages the jobs' stream and the records' bucket stored, from their
// last sequences before and after).

// workflowResult is one round of both.
type workflowResult struct {
	Steps             int
	Plain, Flow       time.Duration // the first submit to the last end
	PlainW, FlowW     float64       // the stream's and the bucket's writes a step
	JoinAfterLastStep time.Duration // the join's end after the last step's end
	Err               error
}

func (r workflowResult) line() string {
	if r.Err != nil {
		return "error: " + r.Err.Error()
	}
	return fmt.Sprintf("%d steps: as a workflow %v (%.2f writes a step), as plain jobs %v (%.2f writes a step): %.2fx the time, %+.2f writes a step; the join ended %v after its last parent",
		r.Steps, r.Flow.Round(time.Millisecond), r.FlowW, r.Plain.Round(time.Millisecond), r.PlainW,
		r.Flow.Seconds()/r.Plain.Seconds(), r.FlowW-r.PlainW, r.JoinAfterLastStep.Round(time.Millisecond))
}

// workflowRound runs the plain jobs, then the workflow, each on a fresh
// crew-jobs system.
func workflowRound(ctx context.Context, tmp string, sc scenario, bound time.Duration) workflowResult {
	r := workflowResult{Steps: sc.Jobs}
	var err error
	if r.Plain, r.PlainW, _, err = workflowRun(ctx, tmp, sc, bound, false); err != nil {
		r.Err = fmt.Errorf("plain jobs: %w", err)
		return r
	}
	if r.Flow, r.FlowW, r.JoinAfterLastStep, err = workflowRun(ctx, tmp, sc, bound, true); err != nil {
		r.Err = fmt.Errorf("workflow: %w", err)
	}
	return r
}

// workflowRun submits sc.Jobs steps, as a fan-out/fan-in (flow) or as
// plain jobs, and waits for every one to end.
func workflowRun(ctx context.Context, tmp string, sc scenario, bound time.Duration, flow bool) (wall time.Duration, writes float64, joinAfter time.Duration, err error) {
	s := &crewJobsSystem{tmp: tmp}
	t := newTracker(sc.Jobs)
	if err := s.Start(ctx, sc, t); err != nil {
		return 0, 0, 0, err
	}
	defer func() { err = errors.Join(err, s.Stop()) }()
	js, err := jetstream.New(s.nc)
	if err != nil {
		return 0, 0, 0, err
	}
	before, err := storeWrites(ctx, js)
	if err != nil {
		return 0, 0, 0, err
	}
	ids := make([]string, sc.Jobs)
	submit := func(n int, after ...string) error {
		spec, err := jobs.NewSpec(benchSleep{N: n, Sleep: jobs.Duration(sc.Sleep)})
		if err != nil {
			return err
		}
		spec.After = after
		t.enqueue(n, time.Now())
		rec, err := s.runner.Submit(ctx, spec)
		ids[n] = rec.ID
		return err
	}
	first, last := 0, sc.Jobs
	var root []string
	if flow {
		if err := submit(0); err != nil {
			return 0, 0, 0, err
		}
		root, first, last = []string{ids[0]}, 1, sc.Jobs-1
	}
	errs := make(chan error, sc.Producers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := first
	for range sc.Producers {
		wg.Go(func() {
			for {
				mu.Lock()
				n := next
				next++
				mu.Unlock()
				if n >= last {
					return
				}
				if err := submit(n, root...); err != nil {
					errs <- fmt.Errorf("step %d: %w", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, 0, err
	}
	if flow {
		if err := submit(sc.Jobs-1, ids[1:sc.Jobs-1]...); err != nil {
			return 0, 0, 0, fmt.Errorf("the join: %w", err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if err := s.WaitAll(wctx); err != nil {
		return 0, 0, 0, fmt.Errorf("waiting for the steps: %w", err)
	}
	after, err := storeWrites(ctx, js)
	if err != nil {
		return 0, 0, 0, err
	}
	sum := t.summary()
	if flow {
		t.mu.Lock()
		var lastStep time.Time
		for n := 1; n < sc.Jobs-1; n++ {
			if t.firstEnd[n].After(lastStep) {
				lastStep = t.firstEnd[n]
			}
		}
		joinAfter = t.firstEnd[sc.Jobs-1].Sub(lastStep)
		t.mu.Unlock()
	}
	return sum.Last.Sub(sum.First), float64(after-before) / float64(sc.Jobs), joinAfter, nil
}

// storeWrites is how many messages the jobs' stream and the records'
// bucket have stored so far (their last sequences).
func storeWrites(ctx context.Context, js jetstream.JetStream) (uint64, error) {
	var n uint64
	for _, name := range []string{"jobs", "KV_jobs"} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return 0, fmt.Errorf("stream %s: %w", name, err)
		}
		n += s.CachedInfo().State.LastSeq
	}
	return n, nil
}

// workflowMarkdown is the workflow section of RESULTS.md.
func workflowMarkdown(rs []workflowResult, sc scenario) string {
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Dependencies: a fan-out/fan-in against the same jobs plain (crew-jobs)\n\n")
	fmt.Fprintf(&b, "%d steps of %v on %d workers, submitted by %d producers: one root, %d steps after it (`Spec.After`), and a join after "+
		"all of those; then the same %d steps as plain jobs, each on a fresh store. Wall: the first submit to the last end. "+
		"Writes: the messages the jobs' stream and the records' bucket stored, a step.\n\n",
		sc.Jobs, sc.Sleep, sc.Workers, sc.Producers, sc.Jobs-2, sc.Jobs)
	b.WriteString("| round | workflow wall | plain wall | ratio | workflow writes a step | plain writes a step | the join after its last parent |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(&b, "| %d | error: %v | | | | | |\n", i+1, r.Err)
			continue
		}
		fmt.Fprintf(&b, "| %d | %v | %v | %.2f | %.2f | %.2f | %v |\n", i+1, r.Flow.Round(time.Millisecond), r.Plain.Round(time.Millisecond),
			r.Flow.Seconds()/r.Plain.Seconds(), r.FlowW, r.PlainW, r.JoinAfterLastStep.Round(time.Millisecond))
	}
	return b.String()
}

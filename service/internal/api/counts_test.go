package api_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/memjobs"
	"github.com/crew-go/crew/service/internal/api"
	"github.com/crew-go/crew/service/internal/kinds"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// counter is a Lister whose counts are given.
type counter struct {
	unavailable
	counts jobs.Counts
	err    error
}

func (c counter) List(context.Context, jobs.Query) (jobs.Page, error) { return jobs.Page{}, nil }
func (c counter) Counts(ctx context.Context) (jobs.Counts, error) {
	if c.err == context.DeadlineExceeded {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return c.counts, c.err
}

// TestJobCountsCollector: crewd_jobs has every state, 0 for none; a count
// that fails or outlives its timeout leaves crewd_jobs out and says so in
// crewd_jobs_counted, without failing the scrape.
func TestJobCountsCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c := counter{counts: jobs.Counts{jobs.Failed: 3, jobs.Scheduled: 2}}
	if err := reg.Register(api.NewJobCounts(c, time.Second)); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP crewd_jobs Jobs in the store by state at scrape time (failed: the dead letters, until retried or expired). Replicas share a durable store: aggregate with max.
# TYPE crewd_jobs gauge
crewd_jobs{state="canceled"} 0
crewd_jobs{state="failed"} 3
crewd_jobs{state="not_run"} 0
crewd_jobs{state="queued"} 0
crewd_jobs{state="retrying"} 0
crewd_jobs{state="running"} 0
crewd_jobs{state="scheduled"} 2
crewd_jobs{state="succeeded"} 0
crewd_jobs{state="timed_out"} 0
crewd_jobs{state="waiting"} 0
# HELP crewd_jobs_counted 1 if the scrape's count of the jobs by state (crewd_jobs) answered within its timeout, else 0 and crewd_jobs is left out.
# TYPE crewd_jobs_counted gauge
crewd_jobs_counted 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	for _, failure := range []error{errors.New("jsjobs: not built yet"), context.DeadlineExceeded} {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(api.NewJobCounts(counter{err: failure}, 10*time.Millisecond))
		if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP crewd_jobs_counted 1 if the scrape's count of the jobs by state (crewd_jobs) answered within its timeout, else 0 and crewd_jobs is left out.
# TYPE crewd_jobs_counted gauge
crewd_jobs_counted 0
`)); err != nil {
			t.Fatalf("a count that fails (%v): %v", failure, err)
		}
	}
}

// A JobCounts registered beside crewd's other metrics exports the jobs in
// each state at every scrape.
func ExampleJobCounts() {
	pool, _ := crew.New(crew.WithWorkers(1))
	defer pool.Close()
	runner := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: kinds.New(), DefaultTimeout: time.Second, MaxTimeout: time.Minute}
	reg := prometheus.NewRegistry()
	reg.MustRegister(api.NewJobCounts(runner, api.CountTimeout))

	_ = pool.Pause()
	spec, _ := jobs.NewSpec(kinds.Factorial{N: new(5)})
	_, _ = runner.Submit(context.Background(), spec)
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetGauge().GetValue() > 0 {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				fmt.Println(mf.GetName(), labels, m.GetGauge().GetValue())
			}
		}
	}
	// Output:
	// crewd_jobs [state=queued] 1
	// crewd_jobs_counted [] 1
}

package jsjobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// inQueue is spec in queue q.
func inQueue(spec jobs.Spec, q string) jobs.Spec {
	spec.Queue = q
	return spec
}

// serve runs queue q's jobs on r with a pool of workers until the test
// ends (or until the stop it returns is called).
func serve(t *testing.T, r *jsjobs.Runner, q string, workers int, opts ...natsjs.Option) (stop func()) {
	t.Helper()
	pool, err := crew.New(crew.WithWorkers(workers))
	if err != nil {
		t.Fatal(err)
	}
	src, err := r.QueueSource(context.Background(), q, pool, opts...)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- src.Run(context.Background()) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = src.Shutdown(ctx)
			_ = pool.Shutdown(ctx, crew.Hard)
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// holds is a kind whose jobs count how many of them run at once.
type holdArgs struct {
	For jobs.Duration `json:"for"`
}

func (holdArgs) Kind() string { return "hold" }

type holding struct {
	now, most, ran atomic.Int64
}

func (h *holding) kinds() *jobs.Kinds {
	ks := jobstest.Kinds()
	if err := jobs.Register(ks, func(ctx context.Context, a holdArgs) (int, error) {
		n := h.now.Add(1)
		defer h.now.Add(-1)
		for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
		}
		h.ran.Add(1)
		select {
		case <-time.After(time.Duration(a.For)):
			return 0, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}); err != nil {
		panic(err)
	}
	return ks
}

func hold(d time.Duration, q string) jobs.Spec {
	spec, err := jobs.NewSpec(holdArgs{For: jobs.Duration(d)})
	if err != nil {
		panic(err)
	}
	spec.Queue = q
	return spec
}

// TestQueueBurstDelaysNoOtherQueue: 300 jobs of 50 ms wait in queue
// "bulk", served by two workers (7.5 s of work); once they are under way,
// a job submitted to queue "urgent", served by one worker of its own, ends
// at once, not after the burst.
func TestQueueBurstDelaysNoOtherQueue(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	ctx := context.Background()
	if err := r.SetQueue(ctx, jobs.Queue{Name: "bulk"}); err != nil {
		t.Fatal(err)
	}
	var bulk []string
	for range 300 {
		bulk = append(bulk, submit(t, r, inQueue(jobstest.Sleep(50*time.Millisecond), "bulk")).ID)
	}
	serve(t, r, "bulk", 2)
	outcomesReach(t, r, func(o jsjobs.Outcomes) bool { return o.Succeeded >= 10 })
	serve(t, r, "urgent", 1)
	urgent := submit(t, r, inQueue(jobstest.Factorial(5), "urgent"))
	got := eventually(t, r, urgent.ID, jobs.Succeeded)
	done := 0
	for _, id := range bulk {
		if rec, err := r.Get(ctx, id); err == nil && rec.State == jobs.Succeeded {
			done++
		}
	}
	took := got.Finished.Sub(urgent.Created)
	t.Logf("the urgent job ended %v after it was submitted, %d of the 300 bulk jobs done then", took.Round(time.Millisecond), done)
	if got.Queue != "urgent" {
		t.Errorf("the urgent job reads queue %q", got.Queue)
	}
	if done > 150 || took > 2*time.Second {
		t.Fatalf("the urgent job ended %v after its submit, %d of the 300 bulk jobs before it: it waited behind them", took, done)
	}
}

// TestQueueLimitHoldsAcrossProcesses: queue "partner" limited to 3, served
// by three runners of 4 workers each (12 slots): sampled every 10 ms, never
// more than 3 of its jobs run at once, and 3 do (the limit is used); every
// job runs once.
func TestQueueLimitHoldsAcrossProcesses(t *testing.T) {
	c := newCluster(t)
	var h holding
	cfg := jsConfig()
	cfg.Kinds = h.kinds()
	runners := []*jsjobs.Runner{c.runner(t, cfg), c.runner(t, cfg), c.runner(t, cfg)}
	for _, r := range runners {
		closeRunner(t, r)
	}
	ctx := context.Background()
	if err := runners[0].SetQueue(ctx, jobs.Queue{Name: "partner", Limit: 3}); err != nil {
		t.Fatal(err)
	}
	const n = 30
	var ids []string
	for range n {
		ids = append(ids, submit(t, runners[0], hold(200*time.Millisecond, "partner")).ID)
	}
	for _, r := range runners {
		serve(t, r, "partner", 4)
	}
	var most int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(10 * time.Millisecond):
				most = max(most, h.now.Load())
			}
		}
	}()
	for _, id := range ids {
		eventually(t, runners[0], id, jobs.Succeeded)
	}
	close(stopSampling)
	<-sampled
	t.Logf("%d jobs through a queue limited to 3 on 3 runners of 4 workers: at most %d at once sampled, %d seen by the jobs themselves; %d runs", n, most, h.most.Load(), h.ran.Load())
	if h.most.Load() > 3 || most > 3 {
		t.Fatalf("%d of the queue's jobs ran at once (sampled %d): its limit is 3", h.most.Load(), most)
	}
	if h.most.Load() < 3 {
		t.Fatalf("at most %d of the queue's jobs ran at once: the limit of 3 was never reached", h.most.Load())
	}
	if h.ran.Load() != n {
		t.Fatalf("%d runs of %d jobs", h.ran.Load(), n)
	}
	qs, err := runners[1].Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Name != jobs.DefaultQueue || qs[1].Name != "partner" || qs[1].Limit != 3 {
		t.Fatalf("queues %+v, want the default and partner limited to 3", qs)
	}
}

// TestQueuePauseHoldsEveryProcess: a paused queue served by three runners
// starts none of its jobs for 3 s, though they are accepted and wait
// (Queues says so); resumed, each runs once.
func TestQueuePauseHoldsEveryProcess(t *testing.T) {
	c := newCluster(t)
	var h holding
	cfg := jsConfig()
	cfg.Kinds = h.kinds()
	runners := []*jsjobs.Runner{c.runner(t, cfg), c.runner(t, cfg), c.runner(t, cfg)}
	for _, r := range runners {
		closeRunner(t, r)
		serve(t, r, "reports", 2)
	}
	ctx := context.Background()
	if err := runners[1].PauseQueue(ctx, "reports", time.Time{}); err != nil {
		t.Fatal(err)
	}
	// A process starting (and setting its queues) leaves the pause as it
	// is, its limit changed.
	if err := runners[2].SetQueue(ctx, jobs.Queue{Name: "reports", Limit: 5}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	first := time.Now()
	for range 10 {
		ids = append(ids, submit(t, runners[2], hold(10*time.Millisecond, "reports")).ID)
	}
	time.Sleep(3 * time.Second)
	if n := h.ran.Load(); n != 0 {
		t.Fatalf("%d jobs of a paused queue started", n)
	}
	qs, err := runners[0].Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var reports jobs.QueueInfo
	for _, q := range qs {
		if q.Name == "reports" {
			reports = q
		}
	}
	if !reports.Paused || reports.Waiting != 10 || reports.Limit != 5 {
		t.Fatalf("a paused queue with 10 jobs reads %+v", reports)
	}
	// Its oldest waiting job is the first submitted, 3 s ago.
	if d := reports.OldestWaiting.Sub(first); d < -time.Second || d > time.Second || time.Since(reports.OldestWaiting) < 3*time.Second {
		t.Fatalf("the oldest waiting job reads %v, the first was submitted at %v", reports.OldestWaiting, first)
	}
	// The metrics say as much, read in the background at most every 5 s.
	reg := prometheus.NewRegistry()
	reg.MustRegister(runners[0].Collector())
	want := map[string]func(float64) bool{
		`crew_queue_jobs{queue="reports",state="waiting"}`:   func(v float64) bool { return v == 10 },
		`crew_queue_paused{queue="reports"}`:                 func(v float64) bool { return v == 1 },
		`crew_queue_limit{queue="reports"}`:                  func(v float64) bool { return v == 5 },
		`crew_queue_oldest_waiting_seconds{queue="reports"}`: func(v float64) bool { return v >= 3 && v < 30 },
		`crew_queue_oldest_waiting_seconds{queue="default"}`: func(v float64) bool { return v == 0 },
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := gathered(t, reg)
		missing := ""
		for series, ok := range want {
			if v, found := got[series]; !found || !ok(v) {
				missing += fmt.Sprintf(" %s=%v", series, v)
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queues' metrics after 10 s:%s", missing)
		}
	}
	if err := runners[0].ResumeQueue(ctx, "reports"); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		eventually(t, runners[0], id, jobs.Succeeded)
	}
	qs, err = runners[0].Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Name == "reports" && (!q.OldestWaiting.IsZero() || q.Waiting != 0) {
			t.Fatalf("a queue whose jobs all ran reads %+v: want no oldest waiting", q)
		}
	}
	if n := h.ran.Load(); n != 10 {
		t.Fatalf("%d runs of 10 jobs after the resume", n)
	}
}

// TestQueueAddedWhileRunning: jobs submitted to a queue made (SetQueue)
// and served by no process are accepted and wait, read queued in their
// queue; a Source made for the queue while the process runs serves them.
func TestQueueAddedWhileRunning(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	consume(t, r) // the default queue only
	ctx := context.Background()
	if err := r.SetQueue(ctx, jobs.Queue{Name: "late"}); err != nil {
		t.Fatal(err)
	}
	job := submit(t, r, inQueue(jobstest.Factorial(4), "late"))
	time.Sleep(500 * time.Millisecond)
	got, err := r.Get(ctx, job.ID)
	if err != nil || got.State != jobs.Queued || got.Queue != "late" {
		t.Fatalf("a job of a queue nobody serves reads %+v (%v), want queued in late", got, err)
	}
	page, err := r.List(ctx, jobs.Query{State: jobs.Queued})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != job.ID {
		t.Fatalf("queued: %+v (%v), want the job", page, err)
	}
	serve(t, r, "late", 1)
	got = eventually(t, r, job.ID, jobs.Succeeded)
	if got.Queue != "late" {
		t.Fatalf("ended, it reads queue %q", got.Queue)
	}
}

// TestQueueJobsCancelAndRetry: a job waiting in a named queue is canceled
// (and never runs), a failed one is retried in its queue.
func TestQueueJobsCancelAndRetry(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	ctx := context.Background()
	if err := r.SetQueue(ctx, jobs.Queue{Name: "q1"}); err != nil {
		t.Fatal(err)
	}
	waiting := submit(t, r, inQueue(jobstest.Factorial(3), "q1"))
	if _, was, err := r.Cancel(ctx, waiting.ID); err != nil || was != jobs.Queued {
		t.Fatalf("cancel of a job waiting in q1: was %s, %v", was, err)
	}
	failing := submit(t, r, inQueue(jobstest.Attempts(jobstest.Flaky(jobstest.FlakyArgs{FailRuns: 1}), 1), "q1"))
	serve(t, r, "q1", 1)
	eventually(t, r, failing.ID, jobs.Failed)
	if _, err := r.Retry(ctx, failing.ID); err != nil {
		t.Fatal(err)
	}
	got := eventually(t, r, failing.ID, jobs.Succeeded)
	if got.Queue != "q1" || got.Retries != 1 {
		t.Fatalf("retried: %+v", got)
	}
	if got, err := r.Get(ctx, waiting.ID); err != nil || got.State != jobs.Canceled {
		t.Fatalf("the canceled job reads %+v (%v)", got, err)
	}
}

// TestQueueBadInput: a queue's name that is no subject token, a queue
// that does not exist (a request makes no consumer), a negative limit and
// a limit on the default queue are refused naming the field, a pause of a
// queue that does not exist is ErrNotFound, and nothing is made.
func TestQueueBadInput(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	ctx := context.Background()
	for _, q := range []string{"a.b", "a*", "a b", "ü", strings.Repeat("q", jobs.MaxQueueName+1), "nosuch"} {
		var invalid *jobs.InvalidError
		if _, err := r.Submit(ctx, inQueue(jobstest.Factorial(1), q)); !errors.As(err, &invalid) || !strings.Contains(err.Error(), `"queue"`) {
			t.Errorf("queue %q: %v, want an *InvalidError naming \"queue\"", q, err)
		}
	}
	for _, q := range []jobs.Queue{{Name: "x", Limit: -1}, {Name: jobs.DefaultQueue, Limit: 2}, {Name: "a.b"}} {
		var invalid *jobs.InvalidError
		if err := r.SetQueue(ctx, q); !errors.As(err, &invalid) {
			t.Errorf("SetQueue(%+v): %v, want an *InvalidError", q, err)
		}
	}
	if err := r.PauseQueue(ctx, "nosuch", time.Time{}); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("pause of a queue that does not exist: %v, want ErrNotFound", err)
	}
	if _, err := r.SetPeriodic(ctx, jobs.Periodic{Name: "p", Every: "@every 1h", Spec: inQueue(jobstest.Factorial(1), "nosuch")}); !strings.Contains(fmt.Sprint(err), `"queue" "nosuch"`) {
		t.Errorf("a periodic job of a queue that does not exist: %v, want refused naming it", err)
	}
	qs, err := r.Queues(ctx)
	if err != nil || len(qs) != 1 {
		t.Fatalf("queues after bad input: %+v (%v), want the default alone", qs, err)
	}
}

// TestQueuesAfterAnUpgrade: a consumer made before queues, reading every
// job of the stream, is narrowed to the default queue when the runner
// starts, so that named queues can have consumers beside it.
func TestQueuesAfterAnUpgrade(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	if _, err := c.js.CreateStream(ctx, jetstream.StreamConfig{Name: "jobs", Subjects: []string{"jobs.>", "jobs-at.>"},
		Retention: jetstream.WorkQueuePolicy, AllowMsgSchedules: true, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.js.CreateConsumer(ctx, "jobs", jetstream.ConsumerConfig{Durable: "crewd", FilterSubject: "jobs.>",
		AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	consume(t, r)
	serve(t, r, "other", 1)
	a := submit(t, r, jobstest.Factorial(3))
	b := submit(t, r, inQueue(jobstest.Factorial(3), "other"))
	eventually(t, r, a.ID, jobs.Succeeded)
	eventually(t, r, b.ID, jobs.Succeeded)
}

// gathered is every gauge and counter of reg as "name{label="value",...}"
// to its value, labels in name order.
func gathered(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			if g := m.GetGauge(); g != nil {
				out[name] = g.GetValue()
			}
			if c := m.GetCounter(); c != nil {
				out[name] = c.GetValue()
			}
		}
	}
	return out
}

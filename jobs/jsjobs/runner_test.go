package jsjobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/jobs/natsd"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// cluster is an embedded server and its JetStream, for runners to share.
type cluster struct {
	srv *natsd.Server
	nc  *nats.Conn
	js  jetstream.JetStream
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	srv, err := natsd.Start(t.TempDir(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{srv: srv, nc: nc, js: js}
}

func jsConfig() jsjobs.Config {
	return jsjobs.Config{
		Stream: "jobs", Consumer: "crewd", Bucket: "jobs",
		AckWait: 5 * time.Second, Backoff: func(int) time.Duration { return 10 * time.Millisecond },
		Kinds: jobstest.Kinds(), DefaultTimeout: time.Second, MaxTimeout: time.Minute,
	}
}

func (c *cluster) runner(t *testing.T, cfg jsjobs.Config) *jsjobs.Runner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := jsjobs.New(ctx, c.js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// consume runs r's jobs on a pool of two workers until the test ends.
func consume(t *testing.T, r *jsjobs.Runner, opts ...natsjs.Option) *natsjs.Source {
	t.Helper()
	return serveOn(t, 2, func(pool *crew.Pool) (*natsjs.Source, error) {
		return natsjs.New(pool, r.Consumer(), r.TracedHandle(), opts...)
	})
}

// stopSource stops src pulling: a job submitted after it waits in the
// stream.
func stopSource(t *testing.T, src *natsjs.Source) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := src.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// eventually polls r for job id until it is in state want, for 10 s at
// most: a bound for liveness, not a timing assertion.
func eventually(t *testing.T, r jobs.Runner, id string, want jobs.State) jobs.Record {
	t.Helper()
	var rec jobs.Record
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		rec, err = r.Get(context.Background(), id)
		if err == nil && rec.State == want {
			return rec
		}
	}
	t.Fatalf("job %s: %+v (%v), want %s", id, rec, err, want)
	return rec
}

// outcomesReach waits up to 10 s for r's outcomes to satisfy want: a run
// counts its end after the write that a reader may see first.
func outcomesReach(t *testing.T, r *jsjobs.Runner, want func(jsjobs.Outcomes) bool) {
	t.Helper()
	var o jsjobs.Outcomes
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if o = r.Outcomes(); want(o) {
			return
		}
	}
	t.Fatalf("outcomes %+v", o)
}

func submit(t *testing.T, r jobs.Runner, spec jobs.Spec) jobs.Record {
	t.Helper()
	rec, err := r.Submit(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := jobs.Queued; rec.State != want && !(spec.RunAt.After(time.Now()) && rec.State == jobs.Scheduled) || len(rec.ID) != 16 {
		t.Fatalf("accepted as %+v", rec)
	}
	return rec
}

// TestJetStreamRunsJobs: jobs accepted by one runner run on the Source of
// another and are answered for by either, with each state a run can end
// in, and a factorial's result exact past 2^53.
func TestJetStreamRunsJobs(t *testing.T) {
	c := newCluster(t)
	front := c.runner(t, jsConfig())
	back := c.runner(t, jsConfig()) // another crewd on the same stream
	consume(t, back)

	fact := submit(t, front, jobstest.Factorial(20))
	slow := submit(t, front, jobstest.Attempts(jobstest.Timed(jobstest.Sleep(time.Minute), 50*time.Millisecond), 1))
	nap := submit(t, front, jobstest.Sleep(10*time.Millisecond))

	rec := eventually(t, front, fact.ID, jobs.Succeeded)
	if n, err := jobs.ResultOf[uint64](rec); err != nil || n != 2432902008176640000 || string(rec.Result) != "2432902008176640000" || rec.Attempts != 1 || rec.Kind != "factorial" || rec.Finished.Before(rec.Created) {
		t.Fatalf("factorial record: %+v (result %T)", rec, rec.Result)
	}
	rec = eventually(t, back, slow.ID, jobs.TimedOut)
	if !strings.Contains(rec.Error, "timed out after 50ms") {
		t.Fatalf("timed out record: %+v", rec)
	}
	eventually(t, front, nap.ID, jobs.Succeeded)
	if o := back.Outcomes(); o.Succeeded != 2 || o.TimedOut != 1 || o.Failed+o.Requeued+o.Skipped != 0 {
		t.Fatalf("outcomes %+v", o)
	}
	if _, err := front.Get(context.Background(), "0123456789abcdef"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := front.Get(context.Background(), "a.b"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("an id that is no key: %v", err)
	}
	// An id over the server's 4 KB control line would cost the connection
	// (the server closes it, and nats.go does not reconnect): it never
	// reaches the server.
	for _, id := range []string{strings.Repeat("a", 5000), "0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", "*", ">"} {
		if _, err := front.Get(context.Background(), id); !errors.Is(err, jobs.ErrNotFound) {
			t.Fatalf("id %.20q: %v", id, err)
		}
	}
	if !c.nc.IsConnected() {
		t.Fatalf("the connection after bad ids: %v", c.nc.Status())
	}
	if _, err := front.Get(context.Background(), fact.ID); err != nil {
		t.Fatalf("a good id after bad ones: %v", err)
	}
}

// TestJetStreamSubmitRefuses: a bad job is refused before anything is
// written; a stream full of jobs waiting refuses a new one with ErrFull,
// in the library's words (no store's text), and accepts again once they
// have run: finished jobs never take the room of new ones.
func TestJetStreamSubmitRefuses(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	if _, err := c.js.CreateStream(ctx, jetstream.StreamConfig{Name: "jobs", Subjects: []string{"jobs.>"},
		Retention: jetstream.WorkQueuePolicy, MaxMsgs: 3, Discard: jetstream.DiscardNew}); err != nil {
		t.Fatal(err)
	}
	r := c.runner(t, jsConfig())
	var invalid *jobs.InvalidError
	if _, err := r.Submit(ctx, jobs.Spec{Kind: "dance"}); !errors.As(err, &invalid) {
		t.Fatalf("bad job: %v", err)
	}
	var ids []string
	for n := range 3 {
		ids = append(ids, submit(t, r, jobstest.Factorial(n)).ID)
	}
	_, err := r.Submit(ctx, jobstest.Factorial(4))
	if !errors.Is(err, jobs.ErrFull) || strings.Contains(err.Error(), "nats") || strings.Contains(err.Error(), "10077") {
		t.Fatalf("Submit on a full stream = %v, want ErrFull in the library's words", err)
	}
	consume(t, r)
	for _, id := range ids {
		eventually(t, r, id, jobs.Succeeded)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err = r.Submit(ctx, jobstest.Factorial(4)); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("Submit once the jobs waiting have run: %v", err)
	}
}

// TestJetStreamKeepsRecordsByState: a job waiting in the stream longer
// than every retention is still answered (queued, from its message), while
// a finished job's record with the same retention is gone; bookkeeping
// never refuses a job: a bucket far too small for the records of all the
// jobs run keeps taking new ones, dropping the oldest.
func TestJetStreamKeepsRecordsByState(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.SucceededTTL, cfg.FailedTTL = time.Second, time.Second
	cfg.StoreBytes = 8 << 10
	r := c.runner(t, cfg)
	done := submit(t, r, jobstest.Factorial(3))
	src := consume(t, r)
	eventually(t, r, done.ID, jobs.Succeeded)
	stopSource(t, src)
	waiting := submit(t, r, jobstest.Factorial(4))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := r.Get(context.Background(), done.ID)
		if errors.Is(err, jobs.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a finished record with a 1 s retention still answers after 10 s: %v", err)
		}
	}
	rec, err := r.Get(context.Background(), waiting.ID)
	if err != nil || rec.State != jobs.Queued || rec.Kind != "factorial" || rec.Created.IsZero() {
		t.Fatalf("a job waiting longer than every retention: %+v, %v", rec, err)
	}
	consume(t, r)
	eventually(t, r, waiting.ID, jobs.Succeeded)
	// 8 KiB hold a few dozen records: 200 jobs run, none refused.
	var ids []string
	for n := range 200 {
		ids = append(ids, submit(t, r, jobstest.Factorial(n%20)).ID)
	}
	eventually(t, r, ids[len(ids)-1], jobs.Succeeded)
}

// TestJetStreamHandleIsIdempotent: a redelivered job already finished is
// acked without running; an interrupted run is queued again and runs
// again, counted; a job whose record expired runs and is recorded anew; a
// message that is no job is failed and acked, never retried; a job whose
// runs were interrupted as often as allowed is failed without running.
func TestJetStreamHandleIsIdempotent(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.MaxAttempts = 3
	r := c.runner(t, cfg)
	ctx := context.Background()
	spec := func(s jobs.Spec) []byte {
		b, _ := json.Marshal(s)
		return b
	}
	long := jobstest.Timed(jobstest.Sleep(time.Minute), time.Minute)

	// Interrupted, then run again.
	rec := submit(t, r, long)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.HandleDelivery(runCtx, "jobs."+rec.ID, spec(long)) }()
	eventually(t, r, rec.ID, jobs.Running)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("an interrupted run returned nil: it would be acked and lost")
	}
	got := eventually(t, r, rec.ID, jobs.Queued)
	if got.Attempts != 1 || !strings.Contains(got.Error, "interrupted") {
		t.Fatalf("interrupted record: %+v", got)
	}
	if err := r.HandleDelivery(ctx, "jobs."+rec.ID, spec(jobstest.Sleep(time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	if got := eventually(t, r, rec.ID, jobs.Succeeded); got.Attempts != 2 || got.Error != "" {
		t.Fatalf("second run: %+v", got)
	}

	// Finished already: not run again (a sleep of a minute would hang here).
	if err := r.HandleDelivery(ctx, "jobs."+rec.ID, spec(long)); err != nil {
		t.Fatal(err)
	}
	if got := eventually(t, r, rec.ID, jobs.Succeeded); got.Attempts != 2 {
		t.Fatalf("a finished job ran again: %+v", got)
	}

	// No record (expired): the message is the job.
	if err := r.HandleDelivery(ctx, "jobs.00000000000000aa", spec(jobstest.Factorial(5))); err != nil {
		t.Fatal(err)
	}
	if got := eventually(t, r, "00000000000000aa", jobs.Succeeded); got.Kind != "factorial" || string(got.Result) != "120" || got.Created.IsZero() {
		t.Fatalf("job run without a record: %+v", got)
	}

	// A kind, or an argument, this runner lacks: a failed attempt,
	// retried while attempts remain (a runner that has them may come),
	// then failed.
	for id, data := range map[string][]byte{
		"00000000000000cc": spec(jobs.Spec{Kind: "dance"}),
		"00000000000000dd": []byte(`{"kind":"sleep","args":{"duration":"1s","colour":"red"}}`),
	} {
		if err := r.HandleDelivery(ctx, "jobs."+id, data); err == nil {
			t.Fatalf("%s, which this runner cannot run: acked at once, not retried", data)
		}
		if got := eventually(t, r, id, jobs.Retrying); got.Attempts != 1 || !strings.Contains(got.Error, "this worker lacks it") {
			t.Fatalf("%s, which this runner cannot run: %+v", data, got)
		}
	}
	if err := r.HandleDelivery(ctx, "jobs.00000000000000ce", spec(jobs.Spec{Kind: "dance", MaxAttempts: 1})); err != nil {
		t.Fatalf("a kind this runner lacks, its one attempt spent: %v", err)
	}
	if got := eventually(t, r, "00000000000000ce", jobs.Failed); got.Attempts != 1 {
		t.Fatalf("a kind this runner lacks, its one attempt spent: %+v", got)
	}

	// Not a job, or a bad one: failed, acked.
	for id, data := range map[string][]byte{
		"00000000000000bb": []byte("{not json"),
		"00000000000000de": []byte(`{"kind":"sleep","args":{"duration":"yesterday"}}`),
	} {
		if err := r.HandleDelivery(ctx, "jobs."+id, data); err != nil {
			t.Fatalf("%s: %v: a bad job would be retried for ever", data, err)
		}
		if got := eventually(t, r, id, jobs.Failed); got.Error == "" {
			t.Fatalf("%s: %+v", data, got)
		}
	}
	if err := r.HandleDelivery(ctx, "elsewhere.x", nil); err != nil {
		t.Fatal(err)
	}

	// Interrupted after another run of the same job (a redelivery after a
	// lost lease) has finished it: the record stays finished.
	rec = submit(t, r, long)
	runCtx, cancel = context.WithCancel(ctx)
	go func() { done <- r.HandleDelivery(runCtx, "jobs."+rec.ID, spec(long)) }()
	eventually(t, r, rec.ID, jobs.Running)
	if err := r.HandleDelivery(ctx, "jobs."+rec.ID, spec(jobstest.Factorial(3))); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("an interrupted run returned nil")
	}
	if got := eventually(t, r, rec.ID, jobs.Succeeded); got.Attempts != 2 || string(got.Result) != "6" {
		t.Fatalf("the interrupted run undid the other's end: %+v", got)
	}

	// Interrupted as often as allowed: failed without running again.
	rec = submit(t, r, long)
	for range 3 {
		runCtx, cancel := context.WithCancel(ctx)
		go func() { done <- r.HandleDelivery(runCtx, "jobs."+rec.ID, spec(long)) }()
		eventually(t, r, rec.ID, jobs.Running)
		cancel()
		if err := <-done; err == nil {
			t.Fatal("an interrupted run returned nil")
		}
	}
	if err := r.HandleDelivery(ctx, "jobs."+rec.ID, spec(long)); err != nil {
		t.Fatal(err)
	}
	if got := eventually(t, r, rec.ID, jobs.Failed); got.Attempts != 3 || !strings.Contains(got.Error, "3 runs started, the last one interrupted") {
		t.Fatalf("a job interrupted 3 times: %+v", got)
	}
	if o := r.Outcomes(); o.Succeeded != 3 || o.Requeued != 5 || o.Skipped != 1 || o.Failed != 4 {
		t.Fatalf("outcomes %+v", o)
	}
}

// TestJetStreamUnavailable: with the server gone, a new job and a lookup
// are refused as unavailable (503), within the caller's deadline.
func TestJetStreamUnavailable(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	rec := submit(t, r, jobstest.Factorial(3))
	c.srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := r.Submit(ctx, jobstest.Factorial(3)); !errors.Is(err, jobs.ErrUnavailable) {
		t.Fatalf("Submit without a server: %v", err)
	}
	if _, err := r.Get(ctx, rec.ID); !errors.Is(err, jobs.ErrUnavailable) {
		t.Fatalf("Get without a server: %v", err)
	}
}

// TestJetStreamUsesWhatExists: a stream, consumer and bucket made
// beforehand with other settings are used as they are.
func TestJetStreamUsesWhatExists(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	if _, err := c.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "jobs", TTL: time.Minute, History: 2}); err != nil {
		t.Fatal(err)
	}
	r := c.runner(t, jsConfig())
	c.runner(t, jsConfig()) // a second crewd starting on them
	kv, err := c.js.KeyValue(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.History() != 2 || st.TTL() != time.Minute {
		t.Fatalf("the bucket made beforehand was changed: %v %+v", err, st)
	}
	consume(t, r)
	eventually(t, r, submit(t, r, jobstest.Factorial(3)).ID, jobs.Succeeded)
}

func TestNewJetStreamRunnerRefusesBadSettings(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.FailedTTL = time.Millisecond
	if _, err := jsjobs.New(context.Background(), c.js, cfg); err == nil {
		t.Fatal("a retention of 1 ms: accepted")
	}
	cfg = jsConfig()
	cfg.Kinds = nil
	if _, err := jsjobs.New(context.Background(), c.js, cfg); err == nil {
		t.Fatal("no kinds: accepted")
	}
}

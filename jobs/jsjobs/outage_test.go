package jsjobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// outageServer is a server whose JetStream a test can take away and give
// back while the connection stays up: the store's outage as a replica
// attached to a healthy server sees it while the stream has no leader.
type outageServer struct {
	srv *server.Server
	dir string
	js  jetstream.JetStream
}

func newOutageServer(t *testing.T) *outageServer {
	t.Helper()
	dir := t.TempDir()
	srv := natstest.Start(t, natstest.Options(dir, -1))
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &outageServer{srv: srv, dir: dir, js: js}
}

func (o *outageServer) down(t *testing.T) {
	t.Helper()
	if err := o.srv.DisableJetStream(); err != nil {
		t.Fatal(err)
	}
}

func (o *outageServer) up(t *testing.T) {
	t.Helper()
	if err := o.srv.EnableJetStream(&server.JetStreamConfig{StoreDir: o.dir}); err != nil {
		t.Fatal(err)
	}
}

// waitStore probes until the store answers again.
func waitStore(t *testing.T, r *jsjobs.Runner) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for r.Probe(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the store did not come back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outageRunner is a runner on an outage server, with the store's
// timeout given.
func outageRunner(t *testing.T, storeTimeout time.Duration) (*outageServer, *jsjobs.Runner) {
	t.Helper()
	o := newOutageServer(t)
	cfg := jsConfig()
	cfg.StoreTimeout = storeTimeout
	r, err := jsjobs.New(context.Background(), o.js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o, r
}

// TestStoreOutageCostsNoAttempt: a job delivered while the store cannot be
// reached is handed back as unavailable (natsjs hands it back without
// backoff, never dead-letters it) with no attempt counted; the runner says
// the store is down (readiness, Submit and Get answer at once); once the
// store is back the job runs as its first attempt.
func TestStoreOutageCostsNoAttempt(t *testing.T) {
	o, r := outageRunner(t, 500*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := submit(t, r, jobstest.Factorial(4))
	body, _ := json.Marshal(jobstest.Factorial(4))

	o.down(t)
	start := time.Now()
	err := r.HandleDelivery(ctx, "jobs."+rec.ID, body)
	if !errors.Is(err, natsjs.ErrUnavailable) || !errors.Is(err, jobs.ErrUnavailable) {
		t.Fatalf("a delivery during the outage: %v, want it handed back as unavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the hand-back took %v: the store's timeout is 500ms", d)
	}
	if _, err := r.StoreDown(); err == nil {
		t.Fatal("the runner did not notice the outage")
	}
	start = time.Now()
	if _, err := r.Submit(ctx, jobstest.Factorial(5)); !errors.Is(err, jobs.ErrUnavailable) || time.Since(start) > time.Second {
		t.Fatalf("Submit during a known outage: %v after %v, want ErrUnavailable at once", err, time.Since(start))
	}
	start = time.Now()
	if _, err := r.Get(ctx, rec.ID); !errors.Is(err, jobs.ErrUnavailable) || time.Since(start) > 2*time.Second {
		t.Fatalf("Get during the outage: %v after %v, want ErrUnavailable within the store's timeout", err, time.Since(start))
	}

	o.up(t)
	waitStore(t, r)
	r.HandleProbe(nil) // the probe's success marks the store up
	if _, err := r.StoreDown(); err != nil {
		t.Fatalf("store still down after a good probe: %v", err)
	}
	if err := r.HandleDelivery(ctx, "jobs."+rec.ID, body); err != nil {
		t.Fatal(err)
	}
	got := eventually(t, r, rec.ID, jobs.Succeeded)
	if got.Attempts != 1 {
		t.Fatalf("attempts %d after an outage and one run, want 1: %+v", got.Attempts, got)
	}
	if n := r.StoreHandBacks(); n != 1 {
		t.Fatalf("%d hand-backs counted, want 1", n)
	}
}

// TestStoreOutageAtTheEndDoesNotRunTheJobAgain: the store goes away while
// a job runs and comes back a second later; the job's end is written once
// it is back, the run is not repeated (one attempt) and the delivery is
// acked.
func TestStoreOutageAtTheEndDoesNotRunTheJobAgain(t *testing.T) {
	o, r := outageRunner(t, 300*time.Millisecond)
	ctx := context.Background()
	job := jobstest.Sleep(500 * time.Millisecond)
	rec := submit(t, r, job)
	body, _ := json.Marshal(job)
	done := make(chan error, 1)
	go func() { done <- r.HandleDelivery(ctx, "jobs."+rec.ID, body) }()
	eventually(t, r, rec.ID, jobs.Running)
	o.down(t)
	// The run ends while the store is out: its end is retried.
	endMeetsOutage(t, r)
	o.up(t)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the run's end was not written once the store was back: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Handle did not return after the store came back")
	}
	got := eventually(t, r, rec.ID, jobs.Succeeded)
	if got.Attempts != 1 || r.Outcomes().Succeeded != 1 {
		t.Fatalf("want one attempt, succeeded: %+v, %+v", got, r.Outcomes())
	}
}

// TestStoreOutageCancelsAFirstDeliverysRun: a first delivery whose start
// cannot be recorded is handed back as unavailable with no attempt
// counted, its run cancelled rather than finished; once the store is back
// the job runs as its first attempt.
func TestStoreOutageCancelsAFirstDeliverysRun(t *testing.T) {
	o, r := outageRunner(t, 500*time.Millisecond)
	ctx := context.Background()
	long := jobstest.Timed(jobstest.Sleep(time.Minute), time.Minute)
	rec := submit(t, r, long)
	body, _ := json.Marshal(long)

	o.down(t)
	done := make(chan error, 1)
	go func() { done <- r.HandleFirstDelivery(ctx, "jobs."+rec.ID, body) }()
	select {
	case err := <-done:
		if !errors.Is(err, natsjs.ErrUnavailable) {
			t.Fatalf("a first delivery during the outage: %v, want it handed back as unavailable", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run went on although its start could not be recorded")
	}
	o.up(t)
	waitStore(t, r)
	short, _ := json.Marshal(jobstest.Sleep(time.Millisecond))
	if err := r.HandleFirstDelivery(ctx, "jobs."+rec.ID, short); err != nil {
		t.Fatal(err)
	}
	if got := eventually(t, r, rec.ID, jobs.Succeeded); got.Attempts != 1 {
		t.Fatalf("attempts %d after an outage and one run, want 1: %+v", got.Attempts, got)
	}
}

// endMeetsOutage waits until the runner has met the outage: the end of
// the run it runs could not be written.
func endMeetsOutage(t *testing.T, r *jsjobs.Runner) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, err := r.StoreDown(); err == nil; _, err = r.StoreDown() {
		if time.Now().After(deadline) {
			t.Fatal("the end of the run never met the outage")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lateEndOfARun runs a job of d through a delivery whose run ends while
// the store is out, then ends the delivery's context (its lease lost)
// before the store is back: the end could not be written in time.
func lateEndOfARun(t *testing.T, o *outageServer, r *jsjobs.Runner, d time.Duration) (jobs.Record, []byte) {
	t.Helper()
	job := jobstest.Timed(jobstest.Sleep(d), 10*time.Second)
	rec := submit(t, r, job)
	body, _ := json.Marshal(job)
	ctx, loseLease := context.WithCancel(context.Background())
	defer loseLease()
	done := make(chan error, 1)
	go func() { done <- r.HandleDelivery(ctx, "jobs."+rec.ID, body) }()
	eventually(t, r, rec.ID, jobs.Running)
	o.down(t)
	endMeetsOutage(t, r)
	loseLease()
	select {
	case err := <-done:
		if !errors.Is(err, natsjs.ErrUnavailable) {
			t.Fatalf("a delivery whose lease was lost with its end unwritten: %v, want unavailable", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Handle did not return once its lease was lost")
	}
	return rec, body
}

// TestStoreOutageOutlastingTheLeaseKeepsTheEnd: a run ends while the store
// is out and its delivery's lease is lost before the store is back. The
// end is kept and written once the store answers: the job succeeds with
// one attempt, not run again; its next delivery is acked without a run.
func TestStoreOutageOutlastingTheLeaseKeepsTheEnd(t *testing.T) {
	o, r := outageRunner(t, 300*time.Millisecond)
	rec, body := lateEndOfARun(t, o, r, 200*time.Millisecond)
	o.up(t)
	got := eventually(t, r, rec.ID, jobs.Succeeded)
	if got.Attempts != 1 {
		t.Fatalf("attempts %d, want 1: %+v", got.Attempts, got)
	}
	if err := r.HandleDelivery(context.Background(), "jobs."+rec.ID, body); err != nil {
		t.Fatal(err)
	}
	// One end, written late, and the redelivery skipped.
	outcomesReach(t, r, func(o jsjobs.Outcomes) bool { return o.Succeeded == 1 && o.LateEnds == 1 && o.Skipped == 1 })
}

// TestRedeliveryWritesTheLateEnd: as above, but the job's next delivery
// comes to this runner as soon as the store is back: it writes the end
// kept (or finds it written) and is acked without running the job again.
func TestRedeliveryWritesTheLateEnd(t *testing.T) {
	o, r := outageRunner(t, 300*time.Millisecond)
	const d = 2 * time.Second
	rec, body := lateEndOfARun(t, o, r, d)
	o.up(t)
	waitStore(t, r)
	start := time.Now()
	if err := r.HandleDelivery(context.Background(), "jobs."+rec.ID, body); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= d {
		t.Fatalf("the redelivery took %v: it ran the job (%v) again", took, d)
	}
	got := eventually(t, r, rec.ID, jobs.Succeeded)
	if got.Attempts != 1 {
		t.Fatalf("record %+v: want one attempt", got)
	}
	outcomesReach(t, r, func(o jsjobs.Outcomes) bool { return o.Succeeded == 1 && o.LateEnds == 1 })
}

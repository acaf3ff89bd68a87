package jsjobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestJetStreamCancels: a queued job and a scheduled one never run once
// canceled (their messages gone from the stream); a running job has its
// context cancelled within a second through another runner; a second
// cancel answers as the first; an ended job is an *EndedError naming its
// state; an unknown one ErrNotFound.
func TestJetStreamCancels(t *testing.T) {
	c := newCluster(t)
	front, back := c.runner(t, jsConfig()), c.runner(t, jsConfig())
	ctx := context.Background()

	queued := submit(t, front, jobstest.Factorial(3))
	later := jobstest.Factorial(4)
	later.RunAt = time.Now().Add(1500 * time.Millisecond)
	scheduled := submit2(t, front, later)
	for _, j := range []struct {
		rec jobs.Record
		was jobs.State
	}{{queued, jobs.Queued}, {scheduled, jobs.Scheduled}} {
		rec, was, err := front.Cancel(ctx, j.rec.ID)
		if err != nil || was != j.was || rec.State != jobs.Canceled {
			t.Fatalf("cancel of a %s job: %+v was %s, %v", j.was, rec, was, err)
		}
		again, was2, err := back.Cancel(ctx, j.rec.ID)
		if err != nil || again.State != jobs.Canceled || was2 != jobs.Canceled {
			t.Fatalf("a second cancel: %+v was %s, %v; want canceled again", again, was2, err)
		}
	}
	s, err := c.js.Stream(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := s.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Fatalf("the canceled jobs' messages are still in the stream: %+v %v", info.State, err)
	}

	// Running on back, canceled through front.
	long := jobstest.Timed(jobstest.Sleep(time.Minute), time.Minute)
	running := submit(t, front, long)
	body, _ := json.Marshal(long)
	done := make(chan error, 1)
	go func() { done <- back.HandleDelivery(ctx, "jobs."+running.ID, body) }()
	eventually(t, front, running.ID, jobs.Running)
	_, was, err := front.Cancel(ctx, running.ID)
	if err != nil || was != jobs.Running {
		t.Fatalf("cancel of a running job: was %s, %v", was, err)
	}
	canceledAt := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the canceled run: %v, want it acked", err)
		}
		if d := time.Since(canceledAt); d > time.Second {
			t.Fatalf("the run ended %v after its cancel, want within a second", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a canceled run still runs 10 s after its cancel")
	}
	if got := eventually(t, front, running.ID, jobs.Canceled); got.Error != "canceled while running" {
		t.Fatalf("the canceled running job: %+v", got)
	}

	// The scheduled one, due meanwhile, and the queued one never ran.
	consume(t, back)
	time.Sleep(time.Until(later.RunAt.Add(500 * time.Millisecond))) // the server's time: past it, nothing has run
	if o := front.Outcomes(); o.Succeeded != 0 {
		t.Fatalf("front's outcomes %+v", o)
	}
	if o := back.Outcomes(); o.Succeeded != 0 || o.Failed != 0 {
		t.Fatalf("a canceled job ran: back's outcomes %+v", o)
	}

	ended := submit(t, front, jobstest.Factorial(5))
	eventually(t, front, ended.ID, jobs.Succeeded)
	var endedErr *jobs.EndedError
	if _, _, err := front.Cancel(ctx, ended.ID); !errors.As(err, &endedErr) || endedErr.State != jobs.Succeeded {
		t.Fatalf("cancel of a succeeded job: %v, want an *EndedError naming succeeded", err)
	}
	if _, _, err := front.Cancel(ctx, "00000000000000ff"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("cancel of an unknown job: %v", err)
	}
}

// TestCancelRacingTheEndLeavesOneState: cancels sent as runs end leave
// every job in the state the cancel's answer says: canceled when it was
// answered so, succeeded when it was answered ended.
func TestCancelRacingTheEndLeavesOneState(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	ctx := context.Background()
	const n = 40
	type answer struct {
		id  string
		err error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		spec := jobstest.Sleep(time.Duration(1+i%5) * time.Millisecond)
		if i%5 == 0 {
			spec = jobstest.Factorial(i % 20)
		}
		rec := submit(t, r, spec)
		body, _ := json.Marshal(spec)
		wg.Go(func() { _ = r.HandleFirstDelivery(ctx, "jobs."+rec.ID, body) })
		wg.Go(func() {
			_, _, err := r.Cancel(ctx, rec.ID)
			answers[i] = answer{rec.ID, err}
		})
	}
	wg.Wait()
	canceled, ended := 0, 0
	for _, a := range answers {
		got, err := r.Get(ctx, a.id)
		var endedErr *jobs.EndedError
		switch {
		case err != nil:
			t.Fatalf("job %s: %v", a.id, err)
		case a.err == nil && got.State == jobs.Canceled:
			canceled++
		case errors.As(a.err, &endedErr) && got.State == endedErr.State && got.State == jobs.Succeeded:
			ended++
		default:
			t.Fatalf("job %s: cancel answered %v, record %s", a.id, a.err, got.State)
		}
	}
	t.Logf("%d jobs: %d canceled, %d ended before their cancel", n, canceled, ended)
}

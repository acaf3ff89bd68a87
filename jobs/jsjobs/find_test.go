package jsjobs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/nats-io/nats.go/jetstream"
)

// A job moves from its schedule to its message to its record while Get
// reads those places one after the other: these make it move between two
// reads, where a Get must still find it.

// TestGetFindsAJobThatEndsBetweenItsReads: a job whose end is recorded and
// whose message is acked away after Get (or Cancel, or Retry) read no record and
// before it reads the message is answered as it ended, not as not found.
func TestGetFindsAJobThatEndsBetweenItsReads(t *testing.T) {
	for _, c := range []struct {
		name string
		ask  func(r *jsjobs.Runner, id string) (jobs.Record, error)
	}{
		{"get", func(r *jsjobs.Runner, id string) (jobs.Record, error) { return r.Get(context.Background(), id) }},
		{"retry", func(r *jsjobs.Runner, id string) (jobs.Record, error) {
			rec, err := r.Retry(context.Background(), id)
			if ended := (*jobs.EndedError)(nil); errors.As(err, &ended) && ended.State == rec.State {
				err = nil // succeeded: nothing to retry, it answers the end
			}
			return rec, err
		}},
		{"cancel", func(r *jsjobs.Runner, id string) (jobs.Record, error) {
			rec, _, err := r.Cancel(context.Background(), id)
			if ended := (*jobs.EndedError)(nil); errors.As(err, &ended) && ended.State == rec.State {
				err = nil // too late to cancel: it answers the end
			}
			return rec, err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := newCluster(t)
			r := cl.runner(t, jsConfig())
			rec := submit(t, r, jobstest.Factorial(5))
			var moved atomic.Bool
			r.OnRecordMissing(func(id string) {
				if id == rec.ID && moved.CompareAndSwap(false, true) {
					runToItsEnd(t, r, id)
				}
			})
			got, err := c.ask(r, rec.ID)
			if !moved.Load() {
				t.Fatal("the job was not moved between the reads")
			}
			if err != nil || got.State != jobs.Succeeded {
				t.Fatalf("a job that ended between the reads: %+v (%v), want succeeded", got, err)
			}
		})
	}
}

// TestGetFindsAJobWhoseScheduleFiresBetweenItsReads: a job due later whose
// schedule fires after Get read no message for it and before it reads the
// schedule is answered queued, not as not found.
func TestGetFindsAJobWhoseScheduleFiresBetweenItsReads(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	spec := jobstest.Factorial(5)
	spec.RunAt = time.Now().Add(2 * time.Second)
	rec := submit2(t, r, spec)
	stream, err := c.js.Stream(context.Background(), "jobs")
	if err != nil {
		t.Fatal(err)
	}
	var fired atomic.Bool
	r.OnMessageMissing(func(id string) {
		if id != rec.ID || !fired.CompareAndSwap(false, true) {
			return
		}
		// Wait for the server to fire it: its message stored, the
		// schedule purged.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			_, errAt := stream.GetLastMsgForSubject(context.Background(), "jobs-at."+id)
			_, errJob := stream.GetLastMsgForSubject(context.Background(), "jobs."+id)
			if errors.Is(errAt, jetstream.ErrMsgNotFound) && errJob == nil {
				return
			}
		}
		t.Error("the schedule did not fire within 10 s")
	})
	got, err := r.Get(context.Background(), rec.ID)
	if !fired.Load() {
		t.Fatalf("the schedule did not fire between the reads: %+v %v", got, err)
	}
	if err != nil || got.State != jobs.Queued {
		t.Fatalf("a job whose schedule fired between the reads: %+v (%v), want queued", got, err)
	}
}

// TestGetWhileAReplicaIsSuspect: while a replica does not answer, a Get
// reads a job's record and its message at once (firstLook); it answers as
// the reads in turn do: an ended job from its record, a queued one from its
// message, one due later from its schedule, an unknown one not found.
func TestGetWhileAReplicaIsSuspect(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	ended := submit(t, r, jobstest.Factorial(5))
	runToItsEnd(t, r, ended.ID)
	queued := submit(t, r, jobstest.Factorial(4))
	spec := jobstest.Factorial(3)
	spec.RunAt = time.Now().Add(time.Hour)
	scheduled := submit2(t, r, spec)
	r.SuspectReplicas()
	ctx := context.Background()
	for _, want := range []struct {
		id    string
		state jobs.State
	}{{ended.ID, jobs.Succeeded}, {queued.ID, jobs.Queued}, {scheduled.ID, jobs.Scheduled}} {
		if got, err := r.Get(ctx, want.id); err != nil || got.State != want.state || got.ID != want.id {
			t.Errorf("Get(%s) = %s %s, %v; want %s", want.id, got.ID, got.State, err, want.state)
		}
	}
	if _, err := r.Get(ctx, jobs.NewID()); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("Get of an unknown id: %v, want ErrNotFound", err)
	}
}

// runToItsEnd runs job id as a Source does: its first delivery handled,
// then acked, the ack confirmed (which removes the message).
func runToItsEnd(t *testing.T, r *jsjobs.Runner, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	batch, err := r.Consumer().Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if m.Subject() != "jobs."+id {
			t.Fatalf("delivered %s, want job %s", m.Subject(), id)
		}
		if err := r.HandleFirstDelivery(ctx, m.Subject(), m.Data()); err != nil {
			t.Fatal(err)
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if batch.Error() != nil {
		t.Fatal(batch.Error())
	}
}

// TestGetAsksTheLeadersBeforeNotFound: a replica behind its leader (every
// direct read finding nothing) answers a job just accepted, one due later
// and one ended from the leaders' reads, and an unknown one not found.
func TestGetAsksTheLeadersBeforeNotFound(t *testing.T) {
	cl := newCluster(t)
	front := cl.runner(t, jsConfig())
	ended := submit(t, front, jobstest.Factorial(5))
	runToItsEnd(t, front, ended.ID)
	queued := submit(t, front, jobstest.Factorial(3))
	later := jobstest.Factorial(4)
	later.RunAt = time.Now().Add(time.Hour)
	scheduled := submit2(t, front, later)

	behind := cl.runner(t, jsConfig())
	behind.BehindItsLeader()
	for id, want := range map[string]jobs.State{ended.ID: jobs.Succeeded, queued.ID: jobs.Queued, scheduled.ID: jobs.Scheduled} {
		if rec, err := behind.Get(context.Background(), id); err != nil || rec.State != want {
			t.Fatalf("job %s from a replica behind: %+v, %v; want %s", id, rec, err, want)
		}
	}
	if _, err := behind.Get(context.Background(), jobs.NewID()); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("an unknown job from a replica behind: %v", err)
	}
	if _, _, err := behind.Cancel(context.Background(), queued.ID); err != nil {
		t.Fatalf("cancel of a job accepted elsewhere, from a replica behind: %v", err)
	}
}

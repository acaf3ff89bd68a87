package jsjobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
)

// TestPeriodicJobsTickOnceAcrossRunners: a periodic job set on two
// runners alike (as two replicas at their start) ticks once a second, not
// once a runner: each tick is one job, run once, on whichever runner; a
// cron expression ticks likewise; the schedules are listed; once deleted,
// a schedule ticks no more.
func TestPeriodicJobsTickOnceAcrossRunners(t *testing.T) {
	c := newCluster(t)
	r1, r2 := c.runner(t, jsConfig()), c.runner(t, jsConfig())
	t.Cleanup(func() { _ = r1.Close() }) // its List's tails
	ctx := context.Background()
	every := jobs.Periodic{Name: "every-second", Every: "@every 1s", Spec: jobstest.Factorial(3)}
	cron := jobs.Periodic{Name: "cron", Every: "* * * * * *", TimeZone: "Europe/Berlin", Spec: jobstest.Factorial(4)}
	began := time.Now()
	for _, p := range []jobs.Periodic{every, cron} {
		if changed, err := r1.SetPeriodic(ctx, p); err != nil || !changed {
			t.Fatalf("SetPeriodic %s: changed %v, %v", p.Name, changed, err)
		}
		// The second replica sets the same at its start: nothing moves.
		if changed, err := r2.SetPeriodic(ctx, p); err != nil || changed {
			t.Fatalf("SetPeriodic %s again: changed %v, %v; want unchanged", p.Name, changed, err)
		}
	}
	ps, err := r2.Periodics(ctx)
	if err != nil || len(ps) != 2 || ps[0].Name != "cron" || ps[0].TimeZone != "Europe/Berlin" || ps[1].Name != "every-second" || ps[1].Every != "@every 1s" || ps[1].Spec.Kind != "factorial" {
		t.Fatalf("Periodics: %+v, %v", ps, err)
	}
	consume(t, r1)
	consume(t, r2)
	ticks := func() uint64 { return r1.Outcomes().Ticks + r2.Outcomes().Ticks }
	outcomesReach(t, r1, func(jsjobs.Outcomes) bool { return ticks() >= 6 })
	// Each names its last tick, its next (a second later), and its
	// latest ticks' jobs, newest first.
	if ps, err = r1.Periodics(ctx); err != nil || len(ps) != 2 {
		t.Fatalf("Periodics after ticks: %+v, %v", ps, err)
	}
	for _, p := range ps {
		if p.Last.Before(began) || p.Next.Sub(p.Last) > 2*time.Second || p.Next.Before(p.Last.Add(-time.Second)) || len(p.Recent) < 2 || len(p.Recent) > jobs.MaxRecentTicks {
			t.Errorf("periodic %s: last %v, next %v, recent %v", p.Name, p.Last, p.Next, p.Recent)
			continue
		}
		rec, err := r1.Get(ctx, p.Recent[0])
		if err != nil || rec.Kind != "factorial" {
			t.Errorf("periodic %s's latest job %s: %+v, %v", p.Name, p.Recent[0], rec, err)
		}
	}
	for _, p := range []jobs.Periodic{every, cron} {
		if err := r2.DeletePeriodic(ctx, p.Name); err != nil {
			t.Fatalf("DeletePeriodic %s: %v", p.Name, err)
		}
	}
	elapsed := time.Since(began)
	// Every job the ticks submitted ends, once: nothing left to deliver,
	// every job listed succeeded, no more jobs than ticks handled (a tick
	// delivered again submits the job it did).
	var page jobs.Page
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if page, err = r1.List(ctx, jobs.Query{Kind: "factorial"}); err != nil {
			t.Fatal(err)
		}
		ended := 0
		for _, rec := range page.Jobs {
			if rec.State == jobs.Succeeded {
				ended++
			}
		}
		info, err := r1.Consumer().Info(ctx)
		if err == nil && info.NumPending == 0 && info.NumAckPending == 0 && ended == len(page.Jobs) && ended > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ticks, jobs %+v, consumer %+v %v", ticks(), page.Jobs, info, err)
		}
	}
	if n := uint64(len(page.Jobs)); n > ticks() {
		t.Fatalf("%d jobs from %d ticks handled", n, ticks())
	}
	// At most one job a tick: each schedule ticks once a second.
	if max := 2 * (int(elapsed/time.Second) + 1); len(page.Jobs) > max {
		t.Fatalf("%d jobs in %v from two schedules of a tick a second: more than one job a tick", len(page.Jobs), elapsed)
	}
	for _, rec := range page.Jobs {
		if rec.Attempts != 1 {
			t.Errorf("a tick's job ran %d times: %+v", rec.Attempts, rec)
		}
	}
	// Deleted, they tick no more (two periods).
	before := ticks()
	time.Sleep(2500 * time.Millisecond)
	if after := ticks(); after > before+2 { // a tick each may have been on its way
		t.Fatalf("ticks went on after the delete: %d, then %d", before, after)
	}
	if ps, err := r1.Periodics(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("Periodics after the deletes: %+v, %v", ps, err)
	}
	if err := r1.DeletePeriodic(ctx, "every-second"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("DeletePeriodic of a deleted one: %v, want ErrNotFound", err)
	}
}

// TestPeriodicTickIsOneJob: a tick delivered twice (its ack lost)
// submits one job; a tick taken after its next was due is skipped; a
// schedule set again with another spec replaces the first.
func TestPeriodicTickIsOneJob(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	ctx := context.Background()
	body := []byte(`{"kind":"factorial","args":{"n":5}}`)
	for range 2 {
		if err := r.HandleTick(ctx, "nightly", 42, time.Now().Add(time.Hour), body); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.HandleTick(ctx, "nightly", 43, time.Now().Add(-time.Minute), body); err != nil {
		t.Fatal(err)
	}
	if o := r.Outcomes(); o.Ticks != 2 || o.TicksSkipped != 1 {
		t.Fatalf("outcomes %+v, want 2 ticks handled and 1 skipped", o)
	}
	consume(t, r)
	rec := eventually(t, r, jsjobs.TickID("nightly", 42), jobs.Succeeded)
	if string(rec.Result) != "120" || rec.Attempts != 1 {
		t.Fatalf("the tick's job: %+v", rec)
	}
	if _, err := r.Get(ctx, jsjobs.TickID("nightly", 43)); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("the skipped tick's job: %v, want none", err)
	}
	// The second delivery's publish was a duplicate: one message, one run.
	outcomesReach(t, r, func(o jsjobs.Outcomes) bool { return o.Succeeded == 1 })
	if info, err := r.Consumer().Info(ctx); err != nil || info.NumPending != 0 || info.NumAckPending != 0 {
		t.Fatalf("after the tick's job: %+v %v, want nothing left", info, err)
	}
	if o := r.Outcomes(); o.Succeeded+o.Skipped != 1 {
		t.Fatalf("a tick delivered twice: its job delivered twice (%+v)", o)
	}

	p := jobs.Periodic{Name: "nightly", Every: "0 30 2 * * *", Spec: jobstest.Factorial(5)}
	if changed, err := r.SetPeriodic(ctx, p); err != nil || !changed {
		t.Fatalf("SetPeriodic: %v %v", changed, err)
	}
	p.Spec = jobstest.Factorial(6)
	if changed, err := r.SetPeriodic(ctx, p); err != nil || !changed {
		t.Fatalf("SetPeriodic with another spec: %v %v", changed, err)
	}
	ps, err := r.Periodics(ctx)
	if err != nil || len(ps) != 1 || !strings.Contains(string(ps[0].Spec.Args), "6") {
		t.Fatalf("Periodics after a replacement: %+v %v", ps, err)
	}
}

// TestPeriodicRefuses: a bad periodic job is an *InvalidError naming the
// field, whether the library or the server finds it.
func TestPeriodicRefuses(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	good := func() jobs.Periodic {
		return jobs.Periodic{Name: "p", Every: "@hourly", Spec: jobstest.Factorial(3)}
	}
	for _, c := range []struct {
		name string
		mod  func(*jobs.Periodic)
		want string
	}{
		{"no name", func(p *jobs.Periodic) { p.Name = "" }, `"name"`},
		{"a dot in the name", func(p *jobs.Periodic) { p.Name = "a.b" }, `"name" "a.b"`},
		{"a name too long", func(p *jobs.Periodic) { p.Name = strings.Repeat("x", 65) }, `"name"`},
		{"no every", func(p *jobs.Periodic) { p.Every = "" }, `"every" is required`},
		{"every under a second", func(p *jobs.Periodic) { p.Every = "@every 500ms" }, `"every" "@every 500ms"`},
		{"every not a duration", func(p *jobs.Periodic) { p.Every = "@every day" }, `"every" "@every day"`},
		{"a cron the server refuses", func(p *jobs.Periodic) { p.Every = "61 * * * * *" }, `"every" "61 * * * * *"`},
		{"not a schedule", func(p *jobs.Periodic) { p.Every = "tomorrow" }, `"every" "tomorrow"`},
		{"a zone with @every", func(p *jobs.Periodic) { p.Every, p.TimeZone = "@every 1m", "UTC" }, `"time_zone": "@every" takes none`},
		{"an unknown zone", func(p *jobs.Periodic) { p.TimeZone = "Mars/Olympus" }, `"time_zone" "Mars/Olympus"`},
		{"a run_at", func(p *jobs.Periodic) { p.Spec.RunAt = time.Now().Add(time.Hour) }, `"run_at" and "delay"`},
		{"an unknown kind", func(p *jobs.Periodic) { p.Spec.Kind = "nope" }, `kind "nope"`},
	} {
		p := good()
		c.mod(&p)
		var invalid *jobs.InvalidError
		if _, err := r.SetPeriodic(context.Background(), p); !errors.As(err, &invalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an *InvalidError saying %s", c.name, err, c.want)
		}
	}
	if ps, err := r.Periodics(context.Background()); err != nil || len(ps) != 0 {
		t.Fatalf("refused schedules were kept: %+v %v", ps, err)
	}
	if err := r.DeletePeriodic(context.Background(), "a.b"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("DeletePeriodic of a name no schedule can have: %v", err)
	}
}

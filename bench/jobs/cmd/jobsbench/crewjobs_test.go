package main

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestQueuePoolsKeepTheWorkers(t *testing.T) {
	for _, c := range []struct {
		workers, queues int
		want            []int
	}{
		{32, 8, []int{4, 4, 4, 4, 4, 4, 4, 4}},
		{10, 8, []int{2, 2, 1, 1, 1, 1, 1, 1}},
		{4, 8, []int{1, 1, 1, 1, 1, 1, 1, 1}}, // fewer workers than queues: one each
		{5, 1, []int{5}},
	} {
		if got := queuePools(c.workers, c.queues); !slices.Equal(got, c.want) {
			t.Errorf("queuePools(%d, %d) = %v, want %v", c.workers, c.queues, got, c.want)
		}
	}
}

// TestCrewJobsRunEveryJobOnce runs crew-jobs, crew-jobs-8q and
// crew-jobs-8q-shared on their embedded server, with their workers in a process of their own (this
// test binary, see TestMain): every job submitted ends once. The 8 queues'
// worker serves no default queue, so its jobs ending at all says they went
// to the named queues; the store then holds q1..q8, nothing waiting in any.
func TestCrewJobsRunEveryJobOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server and worker processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	sc := scenario{Name: "test", Jobs: 400, Sleep: time.Millisecond, Producers: 4, Workers: 16}
	for _, s := range newSystems(options{Only: []string{"crew-jobs", "crew-jobs-8q", "crew-jobs-8q-shared"}}, tmp, "", "", "") {
		t.Run(s.Name(), func(t *testing.T) {
			tr := newTracker(sc.Jobs)
			if err := s.Start(ctx, sc, tr); err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			if _, err := produce(ctx, s, sc, tr); err != nil {
				t.Fatal(err)
			}
			if err := s.WaitAll(ctx); err != nil {
				t.Fatal(err)
			}
			if sum := tr.summary(); sum.Ended != sc.Jobs || sum.Twice != 0 {
				t.Errorf("ended %d twice %d, want %d 0", sum.Ended, sum.Twice, sc.Jobs)
			}
			cj := s.(*crewJobsSystem)
			qs, err := cj.runner.Queues(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, q := range qs {
				names = append(names, q.Name)
				if q.Waiting != 0 {
					t.Errorf("queue %s: %d waiting after every job ended", q.Name, q.Waiting)
				}
			}
			want := []string{"default"}
			for i := range cj.queues {
				want = append(want, queueName(i))
			}
			if !slices.Equal(names, want) {
				t.Errorf("queues %v, want %v", names, want)
			}
		})
	}
}

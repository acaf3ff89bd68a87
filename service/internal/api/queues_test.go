package api_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// queued is an in-memory store with queues, as the JetStream store keeps
// them: what the API asks of a jobs.Queuer.
type queued struct {
	jobs.Runner
	mu     sync.Mutex
	paused map[string]time.Time
}

func (q *queued) Queues(context.Context) ([]jobs.QueueInfo, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := []jobs.QueueInfo{{Queue: jobs.Queue{Name: jobs.DefaultQueue}}, {Queue: jobs.Queue{Name: "email", Limit: 3}, Waiting: 2}}
	for i := range out {
		_, out[i].Paused = q.paused[out[i].Name]
	}
	return out, nil
}

func (q *queued) SetQueue(context.Context, jobs.Queue) error { return nil }

func (q *queued) PauseQueue(_ context.Context, name string, until time.Time) error {
	if name == "nosuch" {
		return fmt.Errorf("%w: queue %q: no such queue", jobs.ErrNotFound, name)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.paused[name] = until
	return nil
}

func (q *queued) ResumeQueue(_ context.Context, name string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.paused, name)
	return nil
}

// TestQueuesThroughTheAPI: GET /v1/queues lists the queues with their
// limits, backlogs and pauses; POST .../pause and .../resume set the pause
// (until a time, with ?until=) and answer it.
func TestQueuesThroughTheAPI(t *testing.T) {
	f := newFixture(t)
	store := &queued{Runner: f.api.Jobs, paused: map[string]time.Time{}}
	f.api.Jobs = store
	got := f.do(t, "GET", "/v1/queues", "")
	qs, _ := got.body["queues"].([]any)
	if got.code != 200 || len(qs) != 2 {
		t.Fatalf("GET /v1/queues: %d %v", got.code, got.body)
	}
	if email := qs[1].(map[string]any); email["name"] != "email" || email["limit"] != float64(3) || email["waiting"] != float64(2) || email["paused"] != false {
		t.Fatalf("the email queue: %v", email)
	}
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	got = f.do(t, "POST", "/v1/queues/email/pause?until="+until.Format(time.RFC3339), "")
	if got.code != 200 || got.body["name"] != "email" || got.body["paused"] != true {
		t.Fatalf("pause: %d %v", got.code, got.body)
	}
	if at := store.paused["email"]; !at.Equal(until) {
		t.Fatalf("paused until %v, want %v", at, until)
	}
	got = f.do(t, "GET", "/v1/queues", "")
	if qs := got.body["queues"].([]any); qs[1].(map[string]any)["paused"] != true {
		t.Fatalf("after the pause: %v", got.body)
	}
	got = f.do(t, "POST", "/v1/queues/email/resume", "")
	if got.code != 200 || got.body["paused"] != false || len(store.paused) != 0 {
		t.Fatalf("resume: %d %v (%v)", got.code, got.body, store.paused)
	}
	if got := f.do(t, "POST", "/v1/queues/nosuch/pause", ""); got.code != 404 || got.body["error"] != `no queue "nosuch": a queue exists once a crewd serves it (-job-queues)` {
		t.Fatalf("pause of a queue that does not exist: %d %v", got.code, got.body)
	}
	if got := f.do(t, "POST", "/v1/queues/a*b/pause", ""); got.code != 400 {
		t.Fatalf("pause of a name that is no queue's: %d %v", got.code, got.body)
	}
}

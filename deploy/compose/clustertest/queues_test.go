package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The lifecycle's named queues (CREW_JOB_QUEUES in compose.yaml): limited,
// 4 workers on each replica and at most 3 of its jobs running across them,
// takes a job of 300 ms every 100 ms all through the faults, GET /v1/queues
// sampled each time: it never reads more than 3 taken. held, paused through
// the faults (the replicas' restarts set their queues again), takes a job
// of each priority in turn (1 to 4)
// a second: none of them starts before the resume, all succeed after.
const (
	limitedJob  = `{"kind":"sleep","duration":"300ms","queue":"limited"}`
	heldJob     = `{"kind":"sleep","duration":"10ms","queue":"held"}`
	queuedLimit = 3
)

type queues struct {
	limited, held []string
	mostTaken     int
	samples       int
}

// pauseHeld pauses queue held through a replica.
func (lc *lifecycle) pauseHeld(ctx context.Context, t *testing.T) {
	if code, b, via := lc.do(ctx, 1, "POST", "/v1/queues/held/pause", ""); code != http.StatusOK {
		t.Fatalf("POST /v1/queues/held/pause via %s: %d %s", via, code, firstLine(b))
	}
}

// feedQueues submits to both queues and samples the limited one's jobs
// taken until ctx ends.
func (lc *lifecycle) feedQueues(ctx context.Context, t *testing.T) {
	for i := 0; ctx.Err() == nil; i++ {
		if code, b, _ := lc.do(ctx, i, "POST", "/v1/jobs", limitedJob); code == http.StatusAccepted {
			lc.mu.Lock()
			lc.queues.limited = append(lc.queues.limited, jobID(b))
			lc.mu.Unlock()
		}
		if i%10 == 0 {
			// Each priority in turn: the pause holds every priority's lane.
			job := strings.Replace(heldJob, "}", fmt.Sprintf(`,"priority":%d}`, i/10%4+1), 1)
			if code, b, _ := lc.do(ctx, i, "POST", "/v1/jobs", job); code == http.StatusAccepted {
				lc.mu.Lock()
				lc.queues.held = append(lc.queues.held, jobID(b))
				lc.mu.Unlock()
			}
		}
		if taken, ok := lc.taken(ctx, i, "limited"); ok {
			lc.mu.Lock()
			lc.queues.mostTaken = max(lc.queues.mostTaken, taken)
			lc.queues.samples++
			lc.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// taken is queue q's jobs taken as GET /v1/queues reads them.
func (lc *lifecycle) taken(ctx context.Context, i int, q string) (int, bool) {
	code, b, _ := lc.do(ctx, i, "GET", "/v1/queues", "")
	var got struct {
		Queues []struct {
			Name   string `json:"name"`
			Taken  int    `json:"taken"`
			Paused bool   `json:"paused"`
		} `json:"queues"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &got) != nil {
		return 0, false
	}
	for _, qi := range got.Queues {
		if qi.Name == q {
			return qi.Taken, true
		}
	}
	return 0, false
}

// checkQueues checks that no held job started while its queue was paused,
// resumes it, and waits for every job of both queues to succeed.
func (lc *lifecycle) checkQueues(ctx context.Context, t *testing.T) {
	lc.mu.Lock()
	held, limited := lc.queues.held, lc.queues.limited
	most, samples := lc.queues.mostTaken, lc.queues.samples
	lc.mu.Unlock()
	for _, id := range held {
		if rec, ok := lc.l.get(ctx, 0, id); !ok || rec.state() != "queued" {
			t.Errorf("job %s of the paused queue held reads %v before the resume, want queued", id, rec)
		}
	}
	if code, b, via := lc.do(ctx, 2, "POST", "/v1/queues/held/resume", ""); code != http.StatusOK {
		t.Fatalf("POST /v1/queues/held/resume via %s: %d %s", via, code, firstLine(b))
	}
	for _, ids := range [][]string{held, limited} {
		for _, id := range ids {
			waitFor(ctx, t, 60*time.Second, "job "+id+" to succeed", func() (bool, string) {
				rec, ok := lc.l.get(ctx, 0, id)
				return ok && rec.state() == "succeeded", fmt.Sprint(rec)
			})
		}
	}
	t.Logf("queues through the faults: limited took %d jobs, at most %d taken at once in %d samples (limit %d); held took %d jobs, none started while paused, all succeeded after the resume",
		len(limited), most, samples, queuedLimit, len(held))
	if most > queuedLimit {
		t.Errorf("queue limited read %d jobs taken at once: its limit across the replicas is %d", most, queuedLimit)
	}
	if len(limited) == 0 || len(held) == 0 || samples == 0 {
		t.Errorf("the queues took %d and %d jobs, %d samples: the scenario did not run", len(limited), len(held), samples)
	}
}

// jobID is the "id" of a 202's body.
func jobID(b []byte) string {
	var got struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &got)
	return got.ID
}

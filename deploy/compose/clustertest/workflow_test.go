package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fan-out/fan-in workflow the faults run through: one root, fanWidth
// steps after it, and a join after all of those, posted as jobs with
// "after", each under an idempotency key (a post the faults leave
// unanswered is posted again, and stays one job). Each step sleeps
// fanStep, so that with the steady load beside them the steps run through
// the first faults, a crewd killed mid-run among them. They are of the last
// priority (4), so that the load's and the lifecycle's jobs are delivered
// before them: the workflow fills the workers those leave. Every step must
// succeed, and the join once, after the last of them.
const (
	fanWidth = 998 // with the root and the join, 1,000 steps
	// Each step frees its worker within 2 s, so that the lifecycle's
	// retries find one in time (with 6 s steps, failing jobs meant for the
	// dead letters ran their second attempt after their failing time).
	fanStep = "2s"
)

// fanOut is the workflow as posted.
type fanOut struct {
	root, join string
	steps      []string
	posted     time.Time // when the join was accepted
}

// postFanOut posts the workflow, 16 posts at a time.
func (lc *lifecycle) postFanOut(ctx context.Context, t *testing.T) *fanOut {
	run := fmt.Sprintf("fan-%d", time.Now().UnixNano())
	post := func(i int, body string) (string, error) {
		h := http.Header{"Idempotency-Key": {fmt.Sprintf("%s-%d", run, i)}}
		var last string
		for try := 0; try < 20 && ctx.Err() == nil; try++ {
			code, b, _ := lc.doWith(ctx, i+try, "POST", "/v1/jobs", body, h)
			if code == http.StatusAccepted {
				var r struct{ ID string }
				if err := json.Unmarshal(b, &r); err == nil && r.ID != "" {
					return r.ID, nil
				}
			}
			last = fmt.Sprintf("%d %s", code, firstLine(b))
			sleep(ctx, time.Second)
		}
		return "", fmt.Errorf("step %d of the workflow refused 20 times: %s", i, last)
	}
	f := &fanOut{steps: make([]string, fanWidth)}
	var err error
	if f.root, err = post(0, `{"kind":"sleep","duration":"1s","timeout":"30s","priority":4}`); err != nil {
		t.Fatal(err)
	}
	step := fmt.Sprintf(`{"kind":"sleep","duration":%q,"timeout":"30s","priority":4,"after":[%q]}`, fanStep, f.root)
	errs := make([]error, fanWidth)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range fanWidth {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f.steps[i], errs[i] = post(1+i, step)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	parents, _ := json.Marshal(f.steps)
	if f.join, err = post(1+fanWidth, fmt.Sprintf(`{"kind":"sleep","duration":"10ms","timeout":"30s","priority":4,"after":%s}`, parents)); err != nil {
		t.Fatal(err)
	}
	f.posted = time.Now()
	t.Logf("at %5.1fs posted a workflow of %d steps: %s, %d steps after it (%s each), the join %s after them", time.Since(lc.l.start).Seconds(), fanWidth+2, f.root, fanWidth, fanStep, f.join)
	// The faults begin once its steps are released (every replica races to
	// release each: a storm of store writes that, met by a server's cut,
	// stalled a healthy replica's read 1.1 s), so that they run through
	// the faults rather than wait for them.
	waitFor(ctx, t, time.Minute, "the workflow's steps released (1 job waiting, the join)", func() (bool, string) {
		code, b, _ := lc.do(ctx, 0, "GET", "/v1/jobs/counts", "")
		var c struct{ Counts map[string]int }
		if code != http.StatusOK || json.Unmarshal(b, &c) != nil {
			return false, fmt.Sprintf("%d %s", code, firstLine(b))
		}
		return c.Counts["waiting"] <= 1, fmt.Sprint(c.Counts)
	})
	t.Logf("at %5.1fs its steps released", time.Since(lc.l.start).Seconds())
	return f
}

// checkFanOut waits for the join to end, then requires it succeeded at its
// first attempt after every step had succeeded.
func (lc *lifecycle) checkFanOut(ctx context.Context, t *testing.T, f *fanOut) {
	t.Helper()
	get := func(i int, id string) (stepRecord, error) {
		code, b, _ := lc.do(ctx, i, "GET", "/v1/jobs/"+id, "")
		var r stepRecord
		if code != http.StatusOK {
			return r, fmt.Errorf("GET %s: %d %s", id, code, firstLine(b))
		}
		return r, json.Unmarshal(b, &r)
	}
	var join stepRecord
	waitFor(ctx, t, 4*time.Minute, "the workflow's join to end", func() (bool, string) {
		var err error
		join, err = get(0, f.join)
		if err != nil {
			return false, err.Error()
		}
		return terminal(join.State), join.State
	})
	var last time.Time
	bad := map[string][]string{}
	runs := 0
	for i, id := range append([]string{f.root}, f.steps...) {
		r, err := get(i, id)
		switch {
		case err != nil:
			bad["unread"] = append(bad["unread"], err.Error())
			continue
		case r.State != "succeeded":
			bad[r.State] = append(bad[r.State], id)
		}
		runs += r.Attempts
		if r.Finished.After(last) {
			last = r.Finished
		}
	}
	if len(bad) > 0 {
		t.Errorf("the workflow's steps not succeeded: %v", bad)
	}
	if join.State != "succeeded" || join.Attempts != 1 {
		t.Errorf("the workflow's join: %s after %d attempts, want succeeded at its first", join.State, join.Attempts)
	}
	if join.Finished.Before(last) {
		t.Errorf("the join ended at %v, before its last parent (%v)", join.Finished, last)
	}
	t.Logf("the workflow of %d steps: every step succeeded (%d runs in all, %d more than steps: interrupted by the faults), the join once, %.2fs after its last parent ended and %.0fs after it was posted",
		fanWidth+2, runs+join.Attempts, runs+join.Attempts-fanWidth-2, join.Finished.Sub(last).Seconds(), join.Finished.Sub(f.posted).Seconds())
}

// stepRecord is what the check reads of a step's record.
type stepRecord struct {
	State    string
	Attempts int
	Finished time.Time
}

// terminal says whether a job's state is an end.
func terminal(state string) bool {
	return !strings.Contains(" scheduled waiting queued running retrying ", " "+state+" ")
}

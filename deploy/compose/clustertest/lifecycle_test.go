package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lifecycle is the job lifecycle beside the steady load: jobs due a few
// seconds ahead and jobs of a failing sleep that end in the dead letters,
// submitted all through the faults (schedule), then checked: every job due
// ran once its time had come, every cancel answered 200 left its job
// canceled, never run, and every dead letter succeeded after a retry
// request (check). Running jobs cancelled through another replica
// (cancelRunning) are timed in the calm before and after the faults: a
// replica cut off from its server hears no cancel until it is back. A
// periodic job ticks all through (periodic.go).
type lifecycle struct {
	l *load

	mu        sync.Mutex
	due       map[string]time.Time // scheduled job -> its run_at
	canceled  []string             // waiting jobs whose cancel was answered 200
	dead      map[string]time.Time // failing job -> when it stops failing
	refusals  int                  // lifecycle requests refused by every replica
	stopTimes []time.Duration      // cancel answered -> the run's end seen
	periodic  periodic
	queues    queues // queues.go
}

func newLifecycle(l *load) *lifecycle {
	return &lifecycle{l: l, due: map[string]time.Time{}, dead: map[string]time.Time{}}
}

// do sends a request to the replicas from the i-th on until one answers
// other than 5xx or not at all; it returns that answer.
func (lc *lifecycle) do(ctx context.Context, i int, method, path, body string) (code int, b []byte, via string) {
	return lc.doWith(ctx, i, method, path, body, nil)
}

// doWith is do with the headers h on each request.
func (lc *lifecycle) doWith(ctx context.Context, i int, method, path, body string, h http.Header) (code int, b []byte, via string) {
	for _, name := range lc.l.reps.pick(i) {
		rctx, cancel := context.WithTimeout(ctx, postTimeout)
		req, err := http.NewRequestWithContext(rctx, method, lc.l.reps.url(name, path), strings.NewReader(body))
		if err != nil {
			cancel()
			return 0, []byte(err.Error()), name
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range h {
			req.Header[k] = v
		}
		began := time.Now()
		resp, err := lc.l.client.Do(req)
		if err == nil {
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
		} else {
			b = fmt.Appendf(b, "%s after %.1fs: %v; ", name, time.Since(began).Seconds(), err)
		}
		cancel()
		if err == nil && code < 500 {
			return code, b, name
		}
	}
	// Refused (5xx) or unanswered by every replica.
	lc.mu.Lock()
	lc.refusals++
	lc.mu.Unlock()
	return code, b, ""
}

// schedule submits, every 2 s until ctx ends, two jobs due 3 s ahead, one
// due 5 s ahead cancelled at once through the next replica, and one
// failing sleep (two attempts, failing for 8 s) bound for the dead
// letters.
func (lc *lifecycle) schedule(ctx context.Context, t *testing.T) {
	for i := 0; ctx.Err() == nil; i++ {
		for range 2 {
			if code, b, _ := lc.do(ctx, i, "POST", "/v1/jobs", `{"kind":"sleep","duration":"10ms","delay":"3s"}`); code == http.StatusAccepted {
				var rec struct {
					ID    string    `json:"id"`
					RunAt time.Time `json:"run_at"`
				}
				if err := json.Unmarshal(b, &rec); err != nil || rec.RunAt.IsZero() {
					t.Errorf("a job due later accepted as %s", b)
					return
				}
				lc.mu.Lock()
				lc.due[rec.ID] = rec.RunAt
				lc.mu.Unlock()
			}
		}
		if code, b, _ := lc.do(ctx, i, "POST", "/v1/jobs", `{"kind":"sleep","duration":"10ms","delay":"5s"}`); code == http.StatusAccepted {
			id := idOf(b)
			// A cancel refused during a fault (503: the records' leader
			// cut off) leaves the job to run, as its client was told.
			if code, b, _ := lc.do(ctx, i+1, "DELETE", "/v1/jobs/"+id, ""); code == http.StatusOK {
				lc.mu.Lock()
				lc.canceled = append(lc.canceled, id)
				lc.mu.Unlock()
			} else if code != 0 && code != http.StatusServiceUnavailable {
				t.Errorf("cancel of a job due later: %d %s", code, firstLine(b))
			}
		}
		until := time.Now().Add(8 * time.Second).UTC()
		body := fmt.Sprintf(`{"kind":"sleep","duration":"10ms","fail_until":%q,"max_attempts":2}`, until.Format(time.RFC3339Nano))
		if code, b, _ := lc.do(ctx, i, "POST", "/v1/jobs", body); code == http.StatusAccepted {
			lc.mu.Lock()
			lc.dead[idOf(b)] = until
			lc.mu.Unlock()
		}
		sleep(ctx, 2*time.Second)
	}
}

func idOf(b []byte) string {
	var rec struct{ ID string }
	_ = json.Unmarshal(b, &rec)
	return rec.ID
}

// cancelRunning starts n long jobs one after another, each cancelled
// through another replica than the one that took it once it runs, and
// times each cancel answered to its run's end, seen in the replicas'
// crewd_job_run_seconds_count{outcome="canceled"}.
func (lc *lifecycle) cancelRunning(ctx context.Context, t *testing.T, cl *cluster, n int) {
	for i := range n {
		code, b, via := lc.do(ctx, i, "POST", "/v1/jobs", `{"kind":"sleep","duration":"60s"}`)
		if code != http.StatusAccepted {
			t.Fatalf("a long job: %d %s", code, firstLine(b))
		}
		id := idOf(b)
		waitFor(ctx, t, 20*time.Second, "job "+id+" running", func() (bool, string) {
			rec, err := lc.l.getFrom(ctx, via, id)
			return err == nil && rec.state() == "running", fmt.Sprint(rec, err)
		})
		before := cl.canceledRuns(ctx)
		other := crewds[(slicesIndex(crewds, via)+1)%len(crewds)]
		code, b, _ = lc.do(ctx, slicesIndex(crewds, other), "DELETE", "/v1/jobs/"+id, "")
		answered := time.Now()
		if code != http.StatusOK || !bytes.Contains(b, []byte(`"canceled_while":"running"`)) {
			t.Fatalf("cancel of a running job through %s: %d %s", other, code, firstLine(b))
		}
		waitFor(ctx, t, 30*time.Second, "the run of job "+id+" ended by its cancel", func() (bool, string) {
			now := cl.canceledRuns(ctx)
			for name, v := range now {
				if v > before[name] {
					return true, ""
				}
			}
			return false, fmt.Sprint(before, now)
		})
		lc.mu.Lock()
		lc.stopTimes = append(lc.stopTimes, time.Since(answered))
		lc.mu.Unlock()
	}
}

func slicesIndex(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return 0
}

// canceledRuns reads each replica's count of runs ended by a cancel.
func (cl *cluster) canceledRuns(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	for _, name := range crewds {
		addr, err := cl.c.addr(ctx, name, 9090)
		if err != nil {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		resp, err := cl.client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for line := range strings.Lines(string(b)) {
				if strings.HasPrefix(line, "crewd_job_run_seconds_count{") && strings.Contains(line, `outcome="canceled"`) {
					f := strings.Fields(line)
					v, _ := strconv.ParseFloat(f[len(f)-1], 64)
					out[name] += v
				}
			}
		}
		cancel()
	}
	return out
}

// check waits for the lifecycle's jobs to end and checks how each did;
// the dead letters are listed, retried and must then succeed.
func (lc *lifecycle) check(ctx context.Context, t *testing.T, cl *cluster) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	t0 := time.Now()
	final := func(id string, want ...string) record {
		var rec record
		waitFor(ctx, t, 60*time.Second, "job "+id+" to end "+strings.Join(want, " or "), func() (bool, string) {
			var ok bool
			rec, ok = lc.l.get(ctx, 0, id)
			for _, w := range want {
				if ok && rec.state() == w {
					return true, ""
				}
			}
			return false, fmt.Sprint(rec)
		})
		return rec
	}
	late, again := 0, 0
	for id, at := range lc.due {
		rec := final(id, "succeeded")
		finished, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["finished"]))
		if finished.Before(at) {
			t.Errorf("job %s due at %v ended at %v, before its time", id, at, finished)
		}
		if d := finished.Sub(at); d > 2*time.Second {
			late++
		}
		if rec.attempts() > 1 {
			again++
		}
	}
	for _, id := range lc.canceled {
		if rec := final(id, "canceled", "succeeded"); rec.state() != "canceled" {
			t.Errorf("job %s ran after its cancel was answered 200: %v", id, rec)
		}
	}
	// The dead letters: listed failed with both attempts' errors, then
	// retried (once their failing time is past) and succeeded.
	failed := map[string]bool{}
	list, err := lc.list(ctx, "state=failed&kind=sleep")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		failed[fmt.Sprint(r["id"])] = true
	}
	var latest time.Time
	escaped, interrupted := 0, 0
	for id, until := range lc.dead {
		rec := final(id, "failed", "succeeded")
		if rec.state() == "succeeded" {
			// Its second attempt came after its failing time: a run
			// interrupted by a kill is redelivered only after the ack wait.
			escaped++
			delete(lc.dead, id)
			continue
		}
		errs, _ := rec["errors"].([]any)
		why, _ := rec["error"].(string)
		switch {
		case len(errs) == 2:
		case len(errs) == 1 && strings.HasPrefix(why, "given up:") && strings.Contains(why, "interrupted"):
			// Its second run was cut short by a fault (a kill, a consumer
			// whose leader moved and gave the job out again): a run
			// started counts as an attempt, so that a job that kills its
			// process does not run for ever; it failed with one error.
			interrupted++
		default:
			t.Errorf("dead letter %s: %d errors, want both attempts': %v", id, len(errs), rec)
		}
		if !failed[id] {
			t.Errorf("dead letter %s not listed in GET /v1/jobs?state=failed&kind=sleep", id)
		}
		if until.After(latest) {
			latest = until
		}
	}
	if len(lc.dead) < escaped {
		t.Errorf("only %d of %d failing jobs ended in the dead letters", len(lc.dead), len(lc.dead)+escaped)
	}
	sleep(ctx, time.Until(latest))
	for id := range lc.dead {
		if code, b, _ := lc.do(ctx, 1, "POST", "/v1/jobs/"+id+"/retry", ""); code != http.StatusOK && code != http.StatusAccepted {
			t.Errorf("retry of dead letter %s: %d %s", id, code, firstLine(b))
		}
	}
	// Each retried dead letter must succeed, retried once.
	stuck := map[string]record{}
	for id := range lc.dead {
		stuck[id] = nil
	}
	for deadline := time.Now().Add(60 * time.Second); len(stuck) > 0 && time.Now().Before(deadline); sleep(ctx, 200*time.Millisecond) {
		for id := range stuck {
			rec, ok := lc.l.get(ctx, 0, id)
			switch {
			case !ok:
			case rec.state() == "succeeded" && fmt.Sprint(rec["retries"]) == "1":
				delete(stuck, id)
			case rec.state() == "succeeded" || rec.state() == "failed" || rec.state() == "timed_out" || rec.state() == "canceled":
				t.Errorf("dead letter %s retried: %v", id, rec)
				delete(stuck, id)
			default:
				stuck[id] = rec
			}
		}
	}
	for id, rec := range stuck {
		t.Errorf("dead letter %s retried, not ended within 60 s: %v", id, rec)
		for _, n := range crewds {
			r, err := lc.l.getFrom(ctx, n, id)
			t.Logf("  GET via %s: %v %v", n, r, err)
		}
		for _, n := range natses {
			t.Logf("  %s", story(ctx, "nats://"+cl.addr(ctx, t, n, 4222), id))
		}
		if logs, err := cl.c.run(ctx, append([]string{"logs", "--no-color"}, crewds...)...); err == nil {
			for _, line := range strings.Split(logs, "\n") {
				if strings.Contains(line, id) {
					t.Logf("  %s", line)
				}
			}
		}
	}
	var worst time.Duration
	for _, d := range lc.stopTimes {
		worst = max(worst, d)
		if d > time.Second+200*time.Millisecond { // the metrics' poll adds up to a scrape
			t.Errorf("a running job cancelled through another replica ran on %v after the cancel was answered (at most 1 s)", d)
		}
	}
	phase(t, fmt.Sprintf("lifecycle: %d due later ran after their time (%d over 2 s late, %d more than once); %d cancels of waiting jobs held; %d dead letters listed and retried, %d of them not ended, %d given up after an interrupted run (%d more ran after their failing time); %d running jobs cancelled across replicas, stopped within %v; %d requests refused everywhere",
		len(lc.due), late, again, len(lc.canceled), len(lc.dead), len(stuck), interrupted, escaped, len(lc.stopTimes), worst.Round(time.Millisecond), lc.refusals), t0)
}

// list reads every page of GET /v1/jobs?<query>.
func (lc *lifecycle) list(ctx context.Context, query string) ([]record, error) {
	var all []record
	for next := ""; ; {
		code, b, _ := lc.do(ctx, 0, "GET", "/v1/jobs?"+query+"&limit=1000&after="+next, "")
		var page struct {
			Jobs []record `json:"jobs"`
			Next string   `json:"next"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &page) != nil {
			return nil, fmt.Errorf("GET /v1/jobs?%s: %d %s", query, code, firstLine(b))
		}
		all = append(all, page.Jobs...)
		if next = page.Next; next == "" {
			return all, nil
		}
	}
}

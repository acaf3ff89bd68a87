package app_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/crew-go/crew/service/internal/app"
)

// TestMainListsCountsAndRetries: through the embedded JetStream server
// (and in memory), a job that timed out on its last attempt lists among the
// timed-out ones (newest first, with the job that succeeded before it),
// is counted, is exported as crewd_jobs{state="timed_out"}, and POST
// /v1/jobs/{id}/retry runs it again under its id with fresh attempts,
// a second retry answered the same way; a succeeded job's retry is 409.
func TestMainListsCountsAndRetries(t *testing.T) {
	t.Run("durable", func(t *testing.T) { listsCountsAndRetries(t, start(t, "-data-dir", t.TempDir())) })
	t.Run("memory", func(t *testing.T) { listsCountsAndRetries(t, start(t, "-nats-url", "off")) })
}

func listsCountsAndRetries(t *testing.T, c *crewd) {
	var page map[string]any
	if code := c.do(t, "GET", c.api+"/v1/jobs", "", &page); code != http.StatusOK {
		t.Fatalf("GET /v1/jobs: %d %v", code, page)
	}
	done := c.job(t)
	var rec struct{ ID, State string }
	if code := c.do(t, "POST", c.api+"/v1/jobs", `{"kind":"sleep","duration":"1m","timeout":"50ms","max_attempts":1}`, &rec); code != http.StatusAccepted {
		t.Fatalf("POST a job that times out: %d %+v", code, rec)
	}
	c.awaitJob(t, rec.ID, "timed_out")

	var list struct {
		Jobs []struct{ ID, State string }
		Next string
	}
	if code := c.do(t, "GET", c.api+"/v1/jobs?limit=1", "", &list); code != http.StatusOK || len(list.Jobs) != 1 || list.Jobs[0].ID != rec.ID || list.Next == "" {
		t.Fatalf("GET /v1/jobs?limit=1: %d %+v, want the timed-out job and a cursor", code, list)
	}
	if code := c.do(t, "GET", c.api+"/v1/jobs?limit=1&after="+list.Next, "", &list); code != http.StatusOK || len(list.Jobs) != 1 || list.Jobs[0].ID != done {
		t.Fatalf("the second page: %d %+v, want the succeeded job %s", code, list, done)
	}
	if code := c.do(t, "GET", c.api+"/v1/jobs?state=timed_out&kind=sleep", "", &list); code != http.StatusOK || len(list.Jobs) != 1 || list.Jobs[0].ID != rec.ID {
		t.Fatalf("state=timed_out&kind=sleep: %d %+v", code, list)
	}
	var counts struct{ Counts map[string]int }
	if code := c.do(t, "GET", c.api+"/v1/jobs/counts", "", &counts); code != http.StatusOK || counts.Counts["timed_out"] != 1 || counts.Counts["succeeded"] != 1 {
		t.Fatalf("counts: %d %+v", code, counts)
	}
	if m := scrape(t, c); !strings.Contains(m, `crewd_jobs{state="timed_out"} 1`) || !strings.Contains(m, "crewd_jobs_counted 1") {
		t.Fatalf("/metrics without the timed-out job counted:\n%s", m)
	}

	var first, second map[string]any
	if code := c.do(t, "POST", c.api+"/v1/jobs/"+rec.ID+"/retry", "", &first); code != http.StatusOK || first["retries"] != 1.0 || first["id"] != rec.ID {
		t.Fatalf("retry: %d %v", code, first)
	}
	if code := c.do(t, "POST", c.api+"/v1/jobs/"+rec.ID+"/retry", "", &second); code != http.StatusOK || second["retries"] != 1.0 {
		t.Fatalf("a second retry: %d %v, want the same retry answered", code, second)
	}
	c.awaitJob(t, rec.ID, "timed_out")
	var again struct {
		Retries int
		Errors  []any
	}
	if c.do(t, "GET", c.api+"/v1/jobs/"+rec.ID, "", &again); again.Retries != 1 || len(again.Errors) != 2 {
		t.Fatalf("the retried job: %+v, want 1 retry and both runs' errors", again)
	}
	var conflict map[string]any
	if code := c.do(t, "POST", c.api+"/v1/jobs/"+done+"/retry", "", &conflict); code != http.StatusConflict || !strings.Contains(fmt.Sprint(conflict["error"]), "succeeded") {
		t.Fatalf("retry of a succeeded job: %d %v", code, conflict)
	}
	if code := c.term(t); code != app.ExitOK {
		t.Fatalf("exit code %d, want 0:\n%s", code, c.logs)
	}
}

// scrape reads crewd's /metrics.
func scrape(t *testing.T, c *crewd) string {
	t.Helper()
	resp, err := c.client.Get(c.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSIGKILLMidWorkflowRunsNoStep: crewd killed with SIGKILL while it
// stores a workflow's 1,000 independent steps (each would run at once if
// released) and started again on the same data directory runs none of the
// steps it stored: each reads canceled within about twice the request
// timeout of the submit's start, the workflow's deadline and gate failed,
// nothing succeeded; and a workflow submitted after the restart runs.
func TestSIGKILLMidWorkflowRunsNoStep(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-data-dir", dir, "-request-timeout", "3s", "-nats-ack-wait", "1s", "-shutdown-delay", "0s"}
	c := start(t, args...)
	steps := make([]string, 1000)
	for i := range steps {
		steps[i] = fmt.Sprintf(`{"name":"s%d","job":{"kind":"factorial","n":3}}`, i)
	}
	body := `{"steps":[` + strings.Join(steps, ",") + `]}`
	var answer outcome
	var wg sync.WaitGroup
	began := time.Now()
	wg.Go(func() { answer = post(c.http+"/v1/workflows", body) })
	// Killed once 100 of its jobs are stored, well before its commit.
	stored := func() (n int) {
		for _, k := range counts(t, c) {
			n += k
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); stored() < 100; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the workflow's steps were not stored")
		}
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c.exited
	wg.Wait()
	if answer.code != 0 {
		t.Fatalf("the submit was answered %d (%s) before the kill: the kill was not mid-submit", answer.code, answer.msg)
	}

	c = start(t, args...)
	var got map[string]int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got = counts(t, c)
		if got["waiting"]+got["queued"]+got["running"]+got["scheduled"] == 0 && got["failed"] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an uncommitted workflow's jobs 30 s after the restart: %v, want every step canceled, its deadline and gate failed", got)
		}
	}
	settled := time.Since(began)
	t.Logf("killed after storing %d steps; %v after the submit began, every one canceled: %v", got["canceled"], settled.Round(time.Millisecond), got)
	if got["succeeded"] != 0 || got["canceled"] < 100 {
		t.Errorf("an uncommitted workflow's jobs: %v, want none succeeded, its stored steps canceled", got)
	}

	// Committed after the restart: it runs.
	o := post(c.http+"/v1/workflows", `{"steps":[{"name":"a","job":{"kind":"factorial","n":3}},{"name":"b","after":["a"],"job":{"kind":"factorial","n":4}}]}`)
	if o.code != 202 {
		t.Fatalf("a workflow after the restart: %d %s", o.code, o.msg)
	}
	waitJob(t, c, o.jobID, "succeeded", 20*time.Second)
}

// counts reads GET /v1/jobs/counts.
func counts(t *testing.T, c *crewd) map[string]int {
	t.Helper()
	resp, err := client.Get(c.http + "/v1/jobs/counts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Counts map[string]int }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Counts
}

package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestWorkflowsOverHTTP: POST /v1/workflows submits a diamond whose steps
// run in order, GET /v1/workflows/{id} shows each step's state and the
// counts, and the workflow ends succeeded with every step; a workflow
// canceled has its waiting steps canceled and ends; a cycle, an unknown
// step, a step without a job or with a bad job is a 400 naming it (every
// answer checked against openapi.json).
func TestWorkflowsOverHTTP(t *testing.T) {
	f := newFixture(t)
	a := f.do(t, "POST", "/v1/workflows", `{"steps":[
		{"name":"d","after":["b","c"],"job":{"kind":"factorial","n":3}},
		{"name":"a","job":{"kind":"sleep","duration":"200ms"}},
		{"name":"b","after":["a"],"job":{"kind":"factorial","n":4}},
		{"name":"c","after":["a"],"job":{"kind":"factorial","n":5}}]}`)
	if a.code != 202 || a.body["state"] != "waiting" || a.header.Get("Location") != "/v1/workflows/"+fmt.Sprint(a.body["id"]) {
		t.Fatalf("a diamond workflow: %d %v %v", a.code, a.header, a.body)
	}
	id := a.body["id"].(string)
	steps := a.body["steps"].(map[string]any)
	if len(steps) != 4 {
		t.Fatalf("the steps' ids: %v", steps)
	}
	got := f.do(t, "GET", "/v1/workflows/"+id, "")
	if got.code != 200 || len(got.body["steps"].([]any)) != 4 {
		t.Fatalf("GET of a workflow: %d %v", got.code, got.body)
	}
	for deadline := time.Now().Add(10 * time.Second); got.body["state"] != "succeeded" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = f.do(t, "GET", "/v1/workflows/"+id, "")
	}
	if counts := got.body["counts"].(map[string]any); got.body["state"] != "succeeded" || counts["succeeded"] != 4.0 {
		t.Fatalf("the workflow at its end: %v", got.body)
	}
	if d := f.do(t, "GET", "/v1/jobs/"+steps["d"].(string), ""); d.body["state"] != "succeeded" {
		t.Fatalf("its last step: %v", d.body)
	}
	if plain := f.do(t, "GET", "/v1/workflows/"+steps["a"].(string), ""); plain.code != 404 {
		t.Fatalf("GET /v1/workflows/ of a step's id: %d %v, want 404", plain.code, plain.body)
	}

	// Canceled while its first step runs: the rest canceled, and it ends.
	a = f.do(t, "POST", "/v1/workflows", `{"steps":[{"name":"slow","job":{"kind":"sleep","duration":"300ms"}},{"name":"next","after":["slow"],"job":{"kind":"factorial","n":2}}]}`)
	id = a.body["id"].(string)
	c := f.do(t, "POST", "/v1/workflows/"+id+"/cancel", "")
	if c.code != 200 {
		t.Fatalf("cancel of a workflow: %d %v", c.code, c.body)
	}
	for deadline := time.Now().Add(10 * time.Second); c.body["state"] != "succeeded" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c = f.do(t, "GET", "/v1/workflows/"+id, "")
	}
	if counts := c.body["counts"].(map[string]any); counts["canceled"] != 2.0 {
		t.Fatalf("a canceled workflow at its end: %v, want both steps canceled", c.body)
	}

	// A step that fails until a moment has passed: its dependant canceled;
	// retried after that moment, both run, the other step not again.
	until := time.Now().Add(300 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	a = f.do(t, "POST", "/v1/workflows", `{"steps":[{"name":"flaky","job":{"kind":"sleep","duration":"1ms","fail_until":"`+until+`","max_attempts":1}},
		{"name":"next","after":["flaky"],"job":{"kind":"factorial","n":2}},{"name":"other","job":{"kind":"factorial","n":3}}]}`)
	if a.code != 202 {
		t.Fatalf("a workflow that fails: %d %v", a.code, a.body)
	}
	id = a.body["id"].(string)
	got = f.do(t, "GET", "/v1/workflows/"+id, "")
	for deadline := time.Now().Add(10 * time.Second); got.body["state"] != "succeeded" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = f.do(t, "GET", "/v1/workflows/"+id, "")
	}
	if counts := got.body["counts"].(map[string]any); counts["failed"] != 1.0 || counts["canceled"] != 1.0 {
		t.Fatalf("a workflow whose step failed: %v", got.body)
	}
	time.Sleep(time.Until(time.Now().Add(350 * time.Millisecond)))
	re := f.do(t, "POST", "/v1/workflows/"+id+"/retry", "")
	if re.code != 200 {
		t.Fatalf("retry of a workflow: %d %v", re.code, re.body)
	}
	for deadline := time.Now().Add(10 * time.Second); re.body["state"] != "succeeded" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		re = f.do(t, "GET", "/v1/workflows/"+id, "")
	}
	if counts := re.body["counts"].(map[string]any); counts["succeeded"] != 3.0 {
		t.Fatalf("a workflow retried: %v, want its 3 steps succeeded", re.body)
	}
	for _, s := range re.body["steps"].([]any) {
		step := s.(map[string]any)
		if job := f.do(t, "GET", "/v1/jobs/"+step["id"].(string), ""); (step["name"] == "other") != (job.body["retries"] == nil) {
			t.Errorf("step %v after the retry: %v", step["name"], job.body)
		}
	}

	for _, b := range []struct{ body, says string }{
		{`{"steps":[{"name":"x","after":["y"],"job":{"kind":"factorial","n":1}},{"name":"y","after":["x"],"job":{"kind":"factorial","n":1}}]}`, "a cycle"},
		{`{"steps":[{"name":"x","after":["nope"],"job":{"kind":"factorial","n":1}}]}`, `"nope": no such step`},
		{`{"steps":[{"name":"x"}]}`, `"job" is required`},
		{`{"steps":[{"name":"x","job":{"kind":"factorial","n":99}}]}`, `step "x"`},
		{`{"steps":[]}`, `"steps": 0`},
		{`{"stepz":[]}`, `unknown field`},
	} {
		a := f.do(t, "POST", "/v1/workflows", b.body)
		if msg, _ := a.body["error"].(string); a.code != 400 || !strings.Contains(msg, b.says) {
			t.Errorf("POST /v1/workflows %s: %d %v, want 400 saying %s", b.body, a.code, a.body, b.says)
		}
	}
}

package api_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestJobsAfterOverHTTP: POST /v1/jobs takes "after" and
// "even_on_failure": a job after another is waiting, then runs once its
// parent has succeeded, its record naming its parents (the answers
// checked against openapi.json); a parent unknown, a bad "after", or
// "even_on_failure" alone is a 400 saying why.
func TestJobsAfterOverHTTP(t *testing.T) {
	f := newFixture(t)
	parent := f.do(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"300ms"}`)
	if parent.code != 202 {
		t.Fatalf("parent: %d %v", parent.code, parent.body)
	}
	pid := parent.body["id"].(string)
	child := f.do(t, "POST", "/v1/jobs", fmt.Sprintf(`{"kind":"factorial","n":5,"after":[%q]}`, pid))
	if child.code != 202 || child.body["state"] != "waiting" {
		t.Fatalf("a job after another: %d %v, want 202 waiting", child.code, child.body)
	}
	cid := child.body["id"].(string)
	if got := f.do(t, "GET", "/v1/jobs/"+cid, ""); got.body["state"] != "waiting" || fmt.Sprint(got.body["after"]) != "["+pid+"]" {
		t.Fatalf("the waiting job's record: %v", got.body)
	}
	if done := f.await(t, cid, "succeeded"); fmt.Sprint(done.body["result"]) != "120" {
		t.Fatalf("the job after its parent: %v", done.body)
	}
	for _, c := range []struct{ body, says string }{
		{`{"kind":"factorial","n":1,"after":["00000000000000aa"]}`, `no job 00000000000000aa`},
		{`{"kind":"factorial","n":1,"after":"x"}`, `"after": want an array`},
		{`{"kind":"factorial","n":1,"after":["x"]}`, `"after"[0] "x": not a job id`},
		{`{"kind":"factorial","n":1,"even_on_failure":true}`, `"even_on_failure" without "after"`},
		{fmt.Sprintf(`{"kind":"factorial","n":1,"after":[%q],"delay":"1m"}`, pid), `"after" with "run_at" or "delay"`},
	} {
		a := f.do(t, "POST", "/v1/jobs", c.body)
		if msg, _ := a.body["error"].(string); a.code != 400 || !strings.Contains(msg, c.says) {
			t.Errorf("POST %s: %d %v, want 400 saying %s", c.body, a.code, a.body, c.says)
		}
	}
}

// TestBatchGrowsOverHTTP: POST /v1/jobs/{id}/after adds parents to a
// waiting job, 200 with its record (a repeat answered alike); the job runs
// once after every parent, the added ones too; a parent refused is a 400
// saying why, a job that waits no more a 409, an unknown one a 404.
func TestBatchGrowsOverHTTP(t *testing.T) {
	f := newFixture(t)
	post := func(body string) string {
		t.Helper()
		a := f.do(t, "POST", "/v1/jobs", body)
		if a.code != 202 {
			t.Fatalf("POST /v1/jobs %s: %d %v", body, a.code, a.body)
		}
		return a.body["id"].(string)
	}
	first := post(`{"kind":"sleep","duration":"300ms"}`)
	cb := post(fmt.Sprintf(`{"kind":"factorial","n":4,"after":[%q]}`, first))
	added := post(`{"kind":"sleep","duration":"600ms"}`)
	for range 2 { // the repeat answered like the first
		a := f.do(t, "POST", "/v1/jobs/"+cb+"/after", fmt.Sprintf(`{"after":[%q,%q]}`, added, first))
		if a.code != 200 || a.body["state"] != "waiting" || fmt.Sprint(a.body["after"]) != "["+first+" "+added+"]" {
			t.Fatalf("POST after: %d %v, want 200 waiting after both", a.code, a.body)
		}
	}
	waiting := post(fmt.Sprintf(`{"kind":"factorial","n":1,"after":[%q]}`, added))
	for _, c := range []struct{ body, says string }{
		{`{"after":[]}`, `no job to add`},
		{`{"after":["x"]}`, `not a job id`},
		{fmt.Sprintf(`{"after":[%q]}`, cb), `the job itself`},
		{`{"after":["00000000000000aa"]}`, `no job 00000000000000aa`},
		{fmt.Sprintf(`{"after":[%q]}`, waiting), `waits for its own parents`},
		{`{"parents":[]}`, `"parents"`},
	} {
		a := f.do(t, "POST", "/v1/jobs/"+cb+"/after", c.body)
		if msg, _ := a.body["error"].(string); a.code != 400 || !strings.Contains(msg, c.says) {
			t.Errorf("POST after %s: %d %v, want 400 saying %s", c.body, a.code, a.body, c.says)
		}
	}
	if a := f.do(t, "POST", "/v1/jobs/00000000000000ab/after", fmt.Sprintf(`{"after":[%q]}`, first)); a.code != 404 {
		t.Errorf("POST after for an unknown job: %d %v, want 404", a.code, a.body)
	}
	f.await(t, cb, "succeeded")
	if d := f.do(t, "GET", "/v1/jobs/"+added, ""); d.body["state"] != "succeeded" {
		t.Errorf("the job ended before its added parent: that one is %v", d.body["state"])
	}
	if a := f.do(t, "POST", "/v1/jobs/"+cb+"/after", fmt.Sprintf(`{"after":[%q]}`, post(`{"kind":"factorial","n":2}`))); a.code != 409 {
		t.Errorf("POST after for a job that ended: %d %v, want 409", a.code, a.body)
	}
}

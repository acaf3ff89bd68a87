package api_test

import (
	"strings"
	"testing"
	"time"
)

// TestJobProgressAnswered: GET /v1/jobs/{id} of a running job that
// reported its progress (crewd's sleep, once a second) answers it, as
// openapi.json's Progress (every answer is held to the document); once
// the job has ended, no progress.
func TestJobProgressAnswered(t *testing.T) {
	f := newFixture(t)
	a := f.do(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"2500ms","timeout":"10s"}`)
	id, _ := a.body["id"].(string)
	var rec answer
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if rec = f.do(t, "GET", "/v1/jobs/"+id, ""); rec.body["progress"] != nil || rec.body["state"] != "running" && rec.body["state"] != "queued" {
			break
		}
	}
	p, _ := rec.body["progress"].(map[string]any)
	if rec.body["state"] != "running" || p == nil {
		t.Fatalf("a running sleep's record: %s", rec.raw)
	}
	if fr, _ := p["fraction"].(float64); fr < 0.4 || fr > 0.5 || p["note"] != "slept 1s of 2.5s" || p["at"] == nil {
		t.Fatalf("its progress: %v, want 40%% of it slept, the note and when", p)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if rec = f.do(t, "GET", "/v1/jobs/"+id, ""); rec.body["state"] != "running" {
			break
		}
	}
	if rec.body["state"] != "succeeded" || strings.Contains(rec.raw, `"progress"`) {
		t.Fatalf("the ended sleep's record: %s", rec.raw)
	}
}

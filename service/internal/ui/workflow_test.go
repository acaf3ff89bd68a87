package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// TestWorkflowPageDrawsItsSteps: a workflow's page draws each step in a
// column right of its parents, with its state, and lists them; its own
// job's page links to it; a plain job's id is no workflow.
func TestWorkflowPageDrawsItsSteps(t *testing.T) {
	h, tokens, r := newUI(t)
	ctx := context.Background()
	sleep := func(d string) jobs.Spec { return jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"` + d + `"}`)} }
	wf, steps, err := jobs.SubmitWorkflow(ctx, r.(jobs.Canceler), []jobs.Step{
		{Name: "fetch", Spec: sleep("1ms")},
		{Name: "resize", Spec: sleep("1ms"), After: []string{"fetch"}},
		{Name: "album", Spec: sleep("10s"), After: []string{"resize", "fetch"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if rec, _ := r.Get(ctx, steps[2].ID); rec.State == jobs.Running || time.Now().After(deadline) {
			break
		}
	}
	page := do(h, "GET", "/ui/workflows/"+wf.ID, nil, tokens["ops"], nil)
	body := page.Body.String()
	for _, want := range []string{
		`<g data-step="fetch" data-state="succeeded"><rect x="8" y="31"`,
		`<g data-step="resize" data-state="succeeded"><rect x="198" y="31"`,
		`<g data-step="album" data-state="running"><rect x="388" y="31"`, // right of its deepest parent
		`<path d="M158 48 C198 48 158 48 198 48"/>`,                      // fetch to resize
		`<path d="M158 48 C198 14 348 14 388 48"/>`,                      // fetch to album, bowed over resize
		`3 steps, 1 running, 2 succeeded`,
	} {
		if page.Code != 200 || !strings.Contains(body, want) {
			t.Fatalf("the workflow's page, want %s: %d\n%s", want, page.Code, body)
		}
	}
	if job := do(h, "GET", "/ui/jobs/"+wf.ID, nil, tokens["ops"], nil); !strings.Contains(job.Body.String(), `href="/ui/workflows/`+wf.ID+`"`) {
		t.Errorf("the workflow's job page does not link to it:\n%s", job.Body)
	}
	if plain := do(h, "GET", "/ui/workflows/"+steps[0].ID, nil, tokens["ops"], nil); plain.Code != 404 {
		t.Errorf("a step's id as a workflow: %d, want 404", plain.Code)
	}
	// Canceled from its page: its running step canceled.
	csrf := first(csrfField.FindStringSubmatch(body))
	form := url.Values{"csrf": {csrf}, "back": {"/ui/workflows/" + wf.ID}}
	if w := do(h, "POST", "/ui/workflows/"+wf.ID+"/cancel", form, tokens["ops"], nil); w.Code != http.StatusSeeOther {
		t.Fatalf("cancel from the workflow's page: %d %s", w.Code, w.Body)
	}
	if rec, _ := r.Get(ctx, steps[2].ID); rec.State != jobs.Canceled {
		t.Errorf("the workflow's running step after its cancel: %s", rec.State)
	}
}

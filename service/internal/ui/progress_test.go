package ui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// TestJobPageShowsProgress: a running job that reported its progress
// (crewd's sleep, once a second) has a progress bar on its page, with the
// note and how long ago it was reported.
func TestJobPageShowsProgress(t *testing.T) {
	h, tokens, r := newUI(t)
	ctx := context.Background()
	rec, err := r.Submit(ctx, jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"50s"}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _, _ = r.(jobs.Canceler).Cancel(ctx, rec.ID) }()
	for deadline := time.Now().Add(10 * time.Second); rec.Progress == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no progress after 10 s: %+v", rec)
		}
		if rec, err = r.Get(ctx, rec.ID); err != nil {
			t.Fatal(err)
		}
	}
	page := do(h, "GET", "/ui/jobs/"+rec.ID, nil, tokens["reader"], nil).Body.String()
	for _, want := range []string{`<progress max="1" value="0.02`, `<span id="progress-note">slept 1s of 50s</span>`, `reported `} {
		if !strings.Contains(page, want) {
			t.Fatalf("a running job's page without %s:\n%s", want, page)
		}
	}
}

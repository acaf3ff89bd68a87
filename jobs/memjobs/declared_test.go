package memjobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// shoutArgs is a kind the tests declare and do not register.
type shoutArgs struct {
	Text string `json:"text"`
}

func (shoutArgs) Kind() string { return "shout" }

// TestDeclaredKindRefusedAtSubmit: a kind only declared is refused at
// Submit and SubmitOnce, ErrNotRunHere, with no record made and its key
// left free, since nothing but this process would run it; its bad jobs
// are refused as a registered kind's are; the registered kinds beside it
// still run.
func TestDeclaredKindRefusedAtSubmit(t *testing.T) {
	r, _ := newRunner(t, 10, time.Hour, map[string]int{})
	if err := jobs.Declare[shoutArgs](r.Kinds); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec, err := jobs.NewSpec(shoutArgs{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := r.Submit(ctx, spec); !errors.Is(err, jobs.ErrNotRunHere) || !strings.Contains(err.Error(), `shout job`) {
		t.Fatalf("Submit of a declared kind: %+v, %v; want ErrNotRunHere naming it", rec, err)
	}
	if rec, _, err := r.SubmitOnce(ctx, spec, "k1"); !errors.Is(err, jobs.ErrNotRunHere) {
		t.Fatalf("SubmitOnce of a declared kind: %+v, %v; want ErrNotRunHere", rec, err)
	}
	bad := jobs.Spec{Kind: "shout", Args: []byte(`{"loud":true}`)}
	if _, err := r.Submit(ctx, bad); !errors.Is(err, jobs.ErrUnknownField) {
		t.Fatalf("Submit of a declared kind's bad job: %v; want its unknown field refused first", err)
	}
	if counts, err := r.Counts(ctx); err != nil || len(counts) != 0 {
		t.Fatalf("records after the refusals: %v %v", counts, err)
	}
	rec, replayed, err := r.SubmitOnce(ctx, factorial(3), "k1")
	if err != nil || replayed {
		t.Fatalf("the key of a refused submit is taken: %+v %v %v", rec, replayed, err)
	}
	if rec = await(r, rec.ID); rec.State != jobs.Succeeded {
		t.Fatalf("a registered kind beside a declared one: %+v", rec)
	}
}

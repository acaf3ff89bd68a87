package jsjobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Report is a kind whose result is Size bytes of text.
type Report struct {
	Size int `json:"size"`
}

func (Report) Kind() string { return "report" }

// TestResultTooBigIsNotSilentlyZero: a job whose result is over the
// store's message limit is recorded without it (size.go); the caller that
// reads it with jobs.ResultOf is told (jobs.ErrResultNotKept), not handed
// a zero value and a nil error as if the job had returned "" (as before).
func TestResultTooBigIsNotSilentlyZero(t *testing.T) {
	var ks jobs.Kinds
	if err := jobs.Register(&ks, func(_ context.Context, a Report) (string, error) {
		return strings.Repeat("r", a.Size), nil
	}); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t)
	cfg := jsConfig()
	cfg.Kinds = &ks
	r := c.runner(t, cfg)
	closeRunner(t, r)
	consume(t, r)
	spec, err := jobs.NewSpec(Report{Size: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	rec := submit(t, r, spec)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if rec, err = r.Wait(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	out, err := jobs.ResultOf[string](rec)
	if !errors.Is(err, jobs.ErrResultNotKept) || rec.State != jobs.Succeeded {
		t.Fatalf("ResultOf: %d bytes, error %v, want ErrResultNotKept; the record (state %s) says %q", len(out), err, rec.State, rec.Error)
	}
}

package jsjobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// PadArgs makes a job as big as its Pad; the kind's result is Result bytes,
// and its error, if Fail, ErrLen bytes.
type PadArgs struct {
	Pad    string `json:"pad"`
	Result int    `json:"result"`
	Fail   bool   `json:"fail"`
	ErrLen int    `json:"err_len"`
}

func (PadArgs) Kind() string { return "pad" }

func padKinds(t *testing.T) *jobs.Kinds {
	t.Helper()
	ks := gateKinds()
	if err := jobs.Register(ks, func(ctx context.Context, a PadArgs) (string, error) {
		if a.Fail {
			return "", jobs.Permanent(errors.New(strings.Repeat("e", a.ErrLen)))
		}
		return strings.Repeat("r", a.Result), nil
	}); err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestTooBigAJobIsRefused: a job whose spec would leave no room for the
// rest of its record (under the server's max payload, so its message
// would be stored) is refused as invalid, naming its size, by Submit and
// SubmitOnce; the store is not marked down, and the next job runs. (Such a
// job was accepted, and the write of its record, over the limit, was
// retried as an outage for ever: the store down for every job, the stop
// hung.)
func TestTooBigAJobIsRefused(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.Kinds = padKinds(t)
	r := c.runner(t, cfg)
	consume(t, r)
	ctx := context.Background()
	spec, err := jobs.NewSpec(PadArgs{Pad: strings.Repeat("x", 1<<20-2000)})
	if err != nil {
		t.Fatal(err)
	}
	var invalid *jobs.InvalidError
	if _, err := r.Submit(ctx, spec); !errors.As(err, &invalid) || !strings.Contains(err.Error(), "bytes as JSON: at most") {
		t.Fatalf("Submit of a job of 1 MiB: %v, want an InvalidError naming its size", err)
	}
	if _, _, err := r.SubmitOnce(ctx, spec, "big"); !errors.As(err, &invalid) {
		t.Fatalf("SubmitOnce of a job of 1 MiB: %v, want an InvalidError", err)
	}
	if _, err := r.StoreDown(); err != nil {
		t.Fatalf("the store is down after a refused job: %v", err)
	}
	spec, err = jobs.NewSpec(PadArgs{Pad: strings.Repeat("x", 1<<19)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, r, submit(t, r, spec).ID, jobs.Succeeded)
}

// TestResultOverTheLimitIsNotKept: a job whose result would make its
// record too big for the store ends succeeded without it, its error saying
// why; a kind's long error is kept clipped. Neither holds the job's
// message nor marks the store down.
func TestResultOverTheLimitIsNotKept(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.Kinds = padKinds(t)
	r := c.runner(t, cfg)
	consume(t, r)
	spec, err := jobs.NewSpec(PadArgs{Result: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	rec := eventually(t, r, submit(t, r, spec).ID, jobs.Succeeded)
	if len(rec.Result) != 0 || !strings.HasPrefix(rec.Error, "result of 2097154 bytes not kept") {
		t.Fatalf("a job with a 2 MiB result: result %d bytes, error %q", len(rec.Result), rec.Error)
	}
	spec, err = jobs.NewSpec(PadArgs{Fail: true, ErrLen: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	rec = eventually(t, r, submit(t, r, spec).ID, jobs.Failed)
	if len(rec.Error) > jobs.MaxErrorLen || len(rec.Errors) != 1 || len(rec.Errors[0].Error) > jobs.MaxErrorLen || !strings.HasSuffix(rec.Error, "…") {
		t.Fatalf("a job failing with a 3 MiB error: error of %d bytes, errors %d", len(rec.Error), len(rec.Errors))
	}
	if _, err := r.StoreDown(); err != nil {
		t.Fatalf("the store is down: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.Get(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
}

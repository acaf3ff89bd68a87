package cli_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/memjobs"
	"github.com/crew-go/crew/service/internal/api"
	"github.com/crew-go/crew/service/internal/cli"
	"github.com/crew-go/crew/service/internal/kinds"
)

// TestJobsWaitFollowsProgress: crewd jobs wait prints a sleep job's
// progress as it changes, then its record, and exits 0 once it has
// succeeded; an unknown job is 1, no id a usage error.
func TestJobsWaitFollowsProgress(t *testing.T) {
	pool, err := crew.New(crew.WithWorkers(1), crew.WithQueueSize(8))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: kinds.New(), DefaultTimeout: time.Minute, MaxTimeout: time.Minute}
	a := &api.API{Pool: pool, Jobs: r, MaxNumbers: 16, MaxBody: 4096, RequestTimeout: time.Second, RetryAfter: time.Second,
		Log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	env := func(k string) string {
		if k == cli.URLVar {
			return srv.URL
		}
		return ""
	}
	job, err := r.Submit(context.Background(), jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"2500ms"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := cli.Run("jobs", []string{"wait", job.ID}, env, &out, &errb); code != 0 {
		t.Fatalf("wait: %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"% slept 1s of 2.5s\n", "% slept 2s of 2.5s\n", "state     succeeded\n"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("wait printed no %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), "slept 1s of") != 1 {
		t.Fatalf("wait printed a progress again that had not changed:\n%s", out.String())
	}
	for args, want := range map[string]int{"wait 0123456789abcdef": 1, "wait": 2} {
		var out, errb bytes.Buffer
		if code := cli.Run("jobs", strings.Fields(args), env, &out, &errb); code != want {
			t.Errorf("crewd jobs %s: %d, want %d (%s)", args, code, want, errb.String())
		}
	}
}

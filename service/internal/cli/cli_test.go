package cli_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/memjobs"
	"github.com/crew-go/crew/service/internal/api"
	"github.com/crew-go/crew/service/internal/auth"
	"github.com/crew-go/crew/service/internal/cli"
	"github.com/crew-go/crew/service/internal/kinds"
)

// TestJobsFromTheCommandLine: crewd jobs, crewd queues and crewd
// workflows against a
// crewd that asks for tokens: a list filtered by state, a job read,
// canceled and retried, the counts, as a table and as JSON; refusals
// (no token, a scope lacking, an unknown job, a bad verb) with their exit
// codes and the API's reason.
func TestJobsFromTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	tokens := map[string]string{}
	for name, scopes := range map[string]string{"ops": "jobs:read,jobs:admin,jobs:submit", "reader": "jobs:read"} {
		tok, line, err := auth.New(name, scopes)
		if err != nil {
			t.Fatal(err)
		}
		tokens[name] = tok
		lines = append(lines, line)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tokens"), []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := auth.Open(filepath.Join(dir, "tokens"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := crew.New(crew.WithWorkers(1), crew.WithQueueSize(8))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: kinds.New(), DefaultTimeout: time.Minute, MaxTimeout: time.Minute}
	a := &api.API{Pool: pool, Jobs: r, MaxNumbers: 16, MaxBody: 4096, RequestTimeout: time.Second, RetryAfter: time.Second, Auth: f,
		Log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	long, err := r.Submit(context.Background(), jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"50s"}`)})
	if err != nil {
		t.Fatal(err)
	}
	waiter, err := r.Submit(context.Background(), jobs.Spec{Kind: "factorial", Args: []byte(`{"n":3}`), After: []string{long.ID}})
	if err != nil {
		t.Fatal(err)
	}
	member, err := r.Submit(context.Background(), jobs.Spec{Kind: "factorial", Args: []byte(`{"n":4}`)})
	if err != nil {
		t.Fatal(err)
	}
	wf, _, err := jobs.SubmitWorkflow(context.Background(), r, []jobs.Step{
		{Name: "first", Spec: jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"50s"}`)}},
		{Name: "then", Spec: jobs.Spec{Kind: "factorial", Args: []byte(`{"n":3}`)}, After: []string{"first"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	env := func(token string) func(string) string {
		return func(k string) string {
			switch k {
			case cli.URLVar:
				return srv.URL
			case auth.TokenVar:
				return token
			}
			return ""
		}
	}
	run := func(token, what string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := cli.Run(what, args, env(token), &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, tc := range []struct {
		token, what string
		args        []string
		code        int
		out, err    string
	}{
		{tokens["reader"], "jobs", []string{"list"}, 0, long.ID, ""},
		{tokens["reader"], "jobs", []string{"list", "-state", "failed"}, 0, "ID  ", ""},
		{tokens["reader"], "jobs", []string{"get", long.ID, "-json"}, 0, `"id":"` + long.ID, ""},
		{tokens["reader"], "jobs", []string{"counts"}, 0, "running", ""},
		{tokens["reader"], "jobs", []string{"cancel", long.ID}, 1, "", "403 Forbidden: token reader lacks scope jobs:admin"},
		{"", "jobs", []string{"list"}, 1, "", "401 Unauthorized: a token is required"},
		{tokens["ops"], "jobs", []string{"get", "0123456789abcdef"}, 1, "", "404 Not Found"},
		{tokens["reader"], "jobs", []string{"after", waiter.ID, member.ID}, 1, "", "403 Forbidden: token reader lacks scope jobs:submit"},
		{tokens["ops"], "jobs", []string{"after", waiter.ID}, 2, "", "usage"},
		{tokens["ops"], "jobs", []string{"after", waiter.ID, "nope"}, 1, "", `"after"[0] "nope": not a job id`},
		{tokens["ops"], "jobs", []string{"after", waiter.ID, member.ID}, 0, member.ID, ""},
		{tokens["ops"], "jobs", []string{"cancel", long.ID}, 0, "canceled", ""},
		{tokens["ops"], "jobs", []string{"retry", long.ID}, 0, "retries", ""},
		{tokens["ops"], "queues", nil, 1, "", "501"},
		{tokens["ops"], "jobs", []string{"delete", long.ID}, 1, "", "409 Conflict: job " + long.ID + " has not ended"},
		{tokens["reader"], "jobs", []string{"ends"}, 1, "", "501"},
		{tokens["reader"], "workflows", []string{"get", wf.ID}, 0, "then   ", ""},
		{tokens["reader"], "workflows", []string{"cancel", wf.ID}, 1, "", "403 Forbidden"},
		{tokens["ops"], "workflows", []string{"cancel", wf.ID}, 0, "2 canceled", ""},
		{tokens["ops"], "workflows", []string{"get", long.ID}, 1, "", "404 Not Found: no workflow"},
		{tokens["reader"], "dash", []string{"-once"}, 0, "JOBS", ""},
		{tokens["reader"], "dash", []string{"now"}, 2, "", "usage"},
		{tokens["ops"], "jobs", []string{"explode"}, 2, "", "usage: crewd jobs"},
		{tokens["ops"], "jobs", []string{"get"}, 2, "", "usage"},
		{tokens["ops"], "jobs", []string{"list", "-url", "ftp://x"}, 2, "", "want http://host:port"},
		{tokens["reader"], "jobs", []string{"list", "-state", "lost"}, 1, "", `400 Bad Request: "state" "lost": want one of`},
		{tokens["reader"], "jobs", []string{"list", "-queue", "a.b"}, 1, "", `400 Bad Request: "queue" "a.b": want 1 to 64 letters`},
	} {
		code, out, errb := run(tc.token, tc.what, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errb, tc.err) {
			t.Errorf("crewd %s %q: %d\nstdout %q\nstderr %q\nwant %d, %q, %q", tc.what, tc.args, code, out, errb, tc.code, tc.out, tc.err)
		}
	}
	var out, errb bytes.Buffer
	if code := cli.Run("jobs", []string{"get", long.ID, "-token-file", filepath.Join(dir, "ops")}, env(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "state") {
		t.Fatalf("-token-file: %d %s %s", code, out.String(), errb.String())
	}
}

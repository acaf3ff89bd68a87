package api_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/jobs/natsd"
	"github.com/crew-go/crew/service/internal/api"
	"github.com/crew-go/crew/service/internal/kinds"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamAnswersAsDocumented: the routes only the JetStream store
// answers (queues, their pause, periodic jobs and their ticks, the ends a
// minute, the replicas) and the jobs' own, served by a runner on an
// embedded server that runs its jobs, answer as openapi.json says
// (checkAnswers fails the test otherwise), with what each names.
func TestJetStreamAnswersAsDocumented(t *testing.T) {
	srv, err := natsd.Start(t.TempDir(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := jsjobs.New(ctx, js, jsjobs.Config{Kinds: kinds.New(), Consumer: "crewd", Replica: "test-replica"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if err := r.SetQueue(ctx, jobs.Queue{Name: "email", Limit: 2, Rate: 10}); err != nil {
		t.Fatal(err)
	}
	pool, err := crew.New(crew.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	src, err := r.Source(pool)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = src.Shutdown(sctx)
		_ = pool.Shutdown(sctx, crew.Hard)
		<-done
	})
	a := &api.API{Pool: pool, Jobs: r, MaxNumbers: 16, MaxBody: 4096, RequestTimeout: 5 * time.Second, RetryAfter: time.Second}
	hs := httptest.NewServer(checkAnswers(t, a.Handler()))
	t.Cleanup(hs.Close)
	f := &fixture{pool: pool, api: a, srv: hs}

	// A job that runs a while, one that fails, a periodic job that ticks.
	long := f.do(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"30s","timeout":"60s"}`)
	failed := f.do(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","timeout":"1ms","max_attempts":1}`)
	if long.code != 202 || failed.code != 202 {
		t.Fatalf("submits: %d, %d", long.code, failed.code)
	}
	if a := f.do(t, "PUT", "/v1/periodic/tick", `{"every":"@every 1s","kind":"sleep","duration":"1ms"}`); a.code != 200 {
		t.Fatalf("a periodic job: %d %v", a.code, a.body)
	}
	id, failedID := long.body["id"].(string), failed.body["id"].(string)
	eventuallyReads := func(what, path, want string) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			a := f.do(t, "GET", path, "")
			if a.code == 200 && strings.Contains(a.raw, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: GET %s reads %d %s, want %q in it", what, path, a.code, a.raw, want)
			}
		}
	}
	eventuallyReads("the running job", "/v1/replicas", `"id":"`+id+`"`)
	eventuallyReads("the failed job", "/v1/jobs/"+failedID, `"state":"timed_out"`)
	eventuallyReads("the periodic job's ticks", "/v1/periodic/tick", `"recent_jobs":["`)
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/jobs"}, {"GET", "/v1/jobs?queue=email"}, {"GET", "/v1/jobs?state=timed_out"}, {"GET", "/v1/jobs/counts"},
		{"GET", "/v1/jobs/ends?minutes=5"}, {"GET", "/v1/periodic"}, {"GET", "/v1/queues"},
		{"POST", "/v1/queues/email/pause"}, {"POST", "/v1/queues/email/resume"}, {"POST", "/v1/queues/nowhere/pause"},
		{"POST", "/v1/jobs/" + failedID + "/retry"}, {"DELETE", "/v1/jobs/" + id}, {"DELETE", "/v1/jobs/" + id},
		{"DELETE", "/v1/jobs/" + failedID + "/record"}, {"DELETE", "/v1/periodic/tick"}, {"GET", "/v1/periodic/tick"},
		{"GET", "/v1/openapi.json"}, {"GET", "/healthz"}, {"GET", "/readyz"},
	} {
		if a := f.do(t, c.method, c.path, ""); a.code >= 500 {
			t.Errorf("%s %s: %d %s", c.method, c.path, a.code, a.raw)
		}
	}
}

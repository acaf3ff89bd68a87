package jsjobs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRunsWithItsPermissionsOnly: a Runner whose NATS user holds
// PermissionsFor its stream and bucket, and nothing more, goes through
// every part of a job's life (a queue made, limited and paused, jobs run,
// due later, canceled, failed and retried, a periodic job's ticks, keyed
// submits, lists and counts) without one permission violation; that user
// cannot delete the stream, purge another, nor publish or read outside it.
func TestRunsWithItsPermissionsOnly(t *testing.T) {
	cfg := jsConfig()
	cfg.MaxDelay = time.Hour
	perms := jsjobs.PermissionsFor(cfg.Stream, cfg.Bucket)
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*server.User{
			{Username: "crewd", Password: "crewd-pw", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: perms.Publish}, Subscribe: &server.SubjectPermission{Allow: perms.Subscribe}}},
			{Username: "admin", Password: "admin-pw"},
		}}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the server did not start")
	}
	var mu sync.Mutex
	var violations []string
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("crewd", "crewd-pw"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(err.Error(), "Permissions Violation") {
			mu.Lock()
			violations = append(violations, err.Error())
			mu.Unlock()
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := jsjobs.New(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	closeRunner(t, r)
	if err := r.SetQueue(ctx, jobs.Queue{Name: "email", Limit: 2}); err != nil {
		t.Fatal(err)
	}
	consume(t, r)
	serve(t, r, "email", 2)
	var ids []string
	for i := range 5 {
		spec := jobstest.Factorial(i)
		if i%2 == 1 {
			spec.Queue = "email"
		}
		ids = append(ids, submit(t, r, spec).ID)
	}
	later := jobstest.Factorial(3)
	later.Delay = jobs.Duration(1500 * time.Millisecond)
	ids = append(ids, submit2(t, r, later).ID)
	if _, _, err := r.SubmitOnce(ctx, jobstest.Factorial(2), "key-1"); err != nil {
		t.Fatal(err)
	}
	dead := submit(t, r, jobstest.Attempts(jobstest.Flaky(jobstest.FlakyArgs{Fails: 100, Permanent: true}), 1))
	long := submit(t, r, jobstest.Timed(jobstest.Sleep(20*time.Second), 30*time.Second))
	if _, err := r.SetPeriodic(ctx, jobs.Periodic{Name: "tick", Every: "@every 1s", Spec: jobstest.Factorial(1)}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		eventually(t, r, id, jobs.Succeeded)
	}
	eventually(t, r, dead.ID, jobs.Failed)
	if _, err := r.Retry(ctx, dead.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, r, dead.ID, jobs.Failed)
	eventually(t, r, long.ID, jobs.Running)
	if _, _, err := r.Cancel(ctx, long.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, r, long.ID, jobs.Canceled)
	if err := r.PauseQueue(ctx, "email", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := r.ResumeQueue(ctx, "email"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Queues(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.List(ctx, jobs.Query{State: jobs.Succeeded}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Counts(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // a tick or two
	if err := r.DeletePeriodic(ctx, "tick"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(violations) > 0 {
		t.Fatalf("%d permission violations, the first: %v", len(violations), violations[:min(len(violations), 5)])
	}
	mu.Unlock()

	// What the user may not do: a request it may not send is never
	// answered (a violation, then a timeout).
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if err := js.DeleteStream(short, cfg.Stream); err == nil {
		t.Error("crewd's user deleted its stream")
	}
	admin, err := nats.Connect(srv.ClientURL(), nats.UserInfo("admin", "admin-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ajs, _ := jetstream.New(admin)
	if _, err := ajs.CreateStream(ctx, jetstream.StreamConfig{Name: "other", Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	short2, cancelShort2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort2()
	if _, err := js.Stream(short2, "other"); err == nil {
		t.Error("crewd's user read another stream")
	}
	if err := nc.Publish("other.x", []byte("x")); err == nil {
		_ = nc.Flush()
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(violations) < 3 {
		t.Errorf("%d violations of the stream's deletion, another stream's read and a publish outside: want 3: %v", len(violations), violations)
	}
}

// TestPartitionedRunsWithItsPermissionsOnly: a store of three partitions
// whose NATS user holds PartitionedPermissionsFor them, and nothing more,
// makes its streams and buckets, takes, runs, lists, counts, cancels and
// retries jobs in every partition, sets, pauses and resumes a queue, and
// reads its replicas and groups, without one permission violation; with
// one partition's permissions alone it cannot be made.
func TestPartitionedRunsWithItsPermissionsOnly(t *testing.T) {
	cfg := jsConfig()
	perms := jsjobs.PartitionedPermissionsFor(cfg.Stream, cfg.Bucket, 3)
	one := jsjobs.PermissionsFor(cfg.Stream, cfg.Bucket)
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*server.User{
			{Username: "crewd", Password: "pw", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: perms.Publish}, Subscribe: &server.SubjectPermission{Allow: perms.Subscribe}}},
			{Username: "one", Password: "pw", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: one.Publish}, Subscribe: &server.SubjectPermission{Allow: one.Subscribe}}},
		}}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the server did not start")
	}
	var mu sync.Mutex
	var violations []string
	connect := func(user string) jetstream.JetStream {
		nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(user, "pw"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if strings.Contains(err.Error(), "Permissions Violation") {
				mu.Lock()
				violations = append(violations, user+": "+err.Error())
				mu.Unlock()
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	ctx := context.Background()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := jsjobs.NewPartitioned(sctx, connect("one"), cfg, 3); err == nil {
		t.Fatal("a store of three partitions made with one partition's permissions")
	}
	mu.Lock()
	violations = nil // the refusal above, on purpose
	mu.Unlock()

	p, err := jsjobs.NewPartitioned(ctx, connect("crewd"), cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.SetQueue(ctx, jobs.Queue{Name: "email", Limit: 3}); err != nil {
		t.Fatal(err)
	}
	if err := p.PauseQueue(ctx, "email", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := p.ResumeQueue(ctx, "email"); err != nil {
		t.Fatal(err)
	}
	serveOn(t, 2, func(pool *crew.Pool) (*natsjs.Source, error) { return p.Source(pool) })
	var ids []string
	for range 6 {
		ids = append(ids, submit(t, p, jobstest.Factorial(4)).ID)
	}
	for _, id := range ids {
		eventually(t, p, id, jobs.Succeeded)
	}
	long := submit(t, p, jobstest.Sleep(time.Minute))
	if _, _, err := p.Cancel(ctx, long.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Retry(ctx, long.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.List(ctx, jobs.Query{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Counts(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Replicas(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.StoreGroups(ctx); err != nil {
		t.Fatal(err)
	}
	p.BalanceOnce(ctx)
	time.Sleep(200 * time.Millisecond) // a violation arrives on its own
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("permission violations: %q", violations)
	}
}

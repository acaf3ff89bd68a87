package main

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestPeersRunEveryJobOnce runs asynq and River (both settings) on the
// stores the benchmark starts, with their workers in a process of their
// own (this test binary, see TestMain): every job enqueued ends once. It
// needs redis-server and PostgreSQL (.ci/install installs both); without
// them it is skipped. crewd is left to the quick run in test.sh, which
// builds it.
func TestPeersRunEveryJobOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis and PostgreSQL")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server")
	}
	if _, err := postgresBin(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	rs, redisAddr, err := startRedis(ctx, tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.stop()
	ps, pgURL, err := startPostgres(ctx, tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.stop()
	sc := scenario{Name: "test", Jobs: 200, Sleep: time.Millisecond, Producers: 4, Workers: 8}
	for _, s := range newSystems(options{Only: []string{"asynq", "river", "river-tuned"}}, tmp, redisAddr, pgURL, "") {
		t.Run(s.Name(), func(t *testing.T) {
			r := throughput(ctx, s, sc, time.Minute)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Ended != sc.Jobs || r.Twice != 0 || r.Rate() <= 0 {
				t.Errorf("ended %d twice %d rate %.0f, want %d 0 >0", r.Ended, r.Twice, r.Rate(), sc.Jobs)
			}
			// After Stop: River's completer has written its last batch.
			n, state, err := s.(storeReporter).StoreState(ctx)
			if err != nil || n != 0 {
				t.Errorf("the store after every job ended and the workers stopped: %d not ended (%s), %v", n, state, err)
			}
		})
	}
}

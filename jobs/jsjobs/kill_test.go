package jsjobs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/jobs/natsd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The kill test re-executes the test binary as a worker process that
// hosts the embedded server; these say what it does.
const (
	envKillDir    = "JSJOBS_TEST_KILL_DIR"    // its data directory
	envKillListen = "JSJOBS_TEST_KILL_LISTEN" // where its server serves the test
	envKillNoJrnl = "JSJOBS_TEST_NO_JOURNAL"  // set: the worker keeps no journal (the test must then fail)
	killJobs      = 32
	killJob       = 3 * time.Second
	killAckWait   = 30 * time.Second
)

// TestKilledWorkerRunsItsJobsAgainAtOnce: a program on the library alone,
// a worker process hosting the embedded server, is SIGKILLed with 32 jobs
// of 3 s running and started again on its data directory: every job
// ends within its work plus a few seconds of restart, not after the 30 s
// AckWait, and its record counts the interrupted run (Attempts 2, and the
// run that ended saw attempt 2).
func TestKilledWorkerRunsItsJobsAgainAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("a process killed and started again")
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	start := func() (*exec.Cmd, *bytes.Buffer) {
		var out bytes.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envKillDir+"="+dir, envKillListen+"="+listen)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		return cmd, &out
	}
	first, out := start()
	nc, err := nats.Connect("nats://"+listen, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := killConfig()
	var r *jsjobs.Runner
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r, err = jsjobs.New(ctx, js, cfg); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner of the test: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer r.Close()
	ids := make([]string, killJobs)
	for i := range ids {
		rec, err := r.Submit(ctx, jobstest.Sleep(killJob))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = rec.ID
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := r.Consumer().Info(ctx)
		if err == nil && info.NumAckPending == killJobs && info.NumPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every job running after 30 s: %v %v\n%s", info, err, out)
		}
	}
	time.Sleep(killJob / 3) // into their work
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = first.Wait()
	killed := time.Now()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("killed worker: %v\n%s", err, out)
	}
	second, out2 := start()
	var last time.Duration
	for _, id := range ids {
		wctx, cancel := context.WithTimeout(ctx, 2*killAckWait)
		rec, err := r.Wait(wctx, id)
		cancel()
		if err != nil {
			t.Fatalf("job %s: %v\n%s", id, err, out2)
		}
		if rec.State != jobs.Succeeded || rec.Attempts != 2 {
			t.Errorf("job %s: %s after %d attempts (%d deliveries), want succeeded after 2: the interrupted run counts", id, rec.State, rec.Attempts, rec.Deliveries)
		}
		last = max(last, rec.Finished.Sub(killed))
	}
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("second worker: %v\n%s", err, out2)
	}
	t.Logf("%d jobs of %v running on a worker SIGKILLed and started again on its data directory: the last ended %v after the kill (AckWait %v)\n%s",
		killJobs, killJob, last.Round(time.Millisecond), killAckWait, out2)
	if limit := killJob + 4*time.Second; last > limit {
		t.Fatalf("the last job ended %v after the kill: want within %v (its work plus a restart), not after the AckWait", last, limit)
	}
}

func killConfig() jsjobs.Config {
	cfg := jsConfig()
	cfg.AckWait, cfg.DefaultTimeout = killAckWait, 2*killJob
	return cfg
}

// maybeKilledWorker runs the worker of the kill test when the binary was
// started as one, and reports whether it was.
func maybeKilledWorker() bool {
	dir := os.Getenv(envKillDir)
	if dir == "" {
		return false
	}
	if err := killedWorker(dir, os.Getenv(envKillListen)); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// killedWorker runs jobs on the embedded server in dir, as a program on
// the library would, until SIGTERM.
func killedWorker(dir, listen string) error {
	srv, err := natsd.Start(dir, listen, nil)
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	cfg := killConfig()
	if os.Getenv(envKillNoJrnl) == "" {
		cfg.Journal = filepath.Join(dir, "held")
	}
	r, err := jsjobs.New(ctx, js, cfg)
	if err != nil {
		return err
	}
	defer r.Close()
	pool, err := crew.New(crew.WithWorkers(killJobs))
	if err != nil {
		return err
	}
	src, err := r.Source(pool)
	if err != nil {
		return err
	}
	stop, cancel := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- src.Run(ctx) }()
	<-stop.Done()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if err := src.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; err != nil {
		return err
	}
	fmt.Println("worker:", src.Stats())
	return pool.Shutdown(sctx, crew.DrainThenHard)
}

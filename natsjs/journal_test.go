package natsjs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The journal test re-executes the test binary as a worker process that
// holds its jobs for journalJob each; these say what it does.
const (
	envJournalURL  = "NATSJS_TEST_JOURNAL_URL"
	envJournalPath = "NATSJS_TEST_JOURNAL_PATH" // "" runs the worker without a journal
	journalJobs    = 32
	journalJob     = 2 * time.Second
	journalAckWait = 30 * time.Second
)

// TestJournalHandsBackWhatAKilledProcessHeld: a worker holding 32 jobs,
// each 2 s of work, is SIGKILLed and started again on its journal: every
// job is done within the work left plus a few seconds of restart, not
// after the 30 s AckWait. Without the journal (NATSJS_TEST_NO_JOURNAL=1,
// which must then fail) they wait out the AckWait.
func TestJournalHandsBackWhatAKilledProcessHeld(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	if _, err := e.js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "done", Subjects: []string{"done.>"}, Storage: jetstream.FileStorage, Duplicates: time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	cons := e.consumer(t, "jobs", "crewd", journalAckWait, -1)
	e.publish(t, "jobs.a", journalJobs)
	path := filepath.Join(t.TempDir(), "held")
	if os.Getenv("NATSJS_TEST_NO_JOURNAL") != "" {
		path = ""
	}
	start := func() (*exec.Cmd, *bytes.Buffer) {
		var out bytes.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envJournalURL+"="+e.srv.ClientURL(), envJournalPath+"="+path)
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
	eventually(t, 30*time.Second, "every job held by the first worker", func() bool {
		return consumerInfo(t, cons).NumAckPending == journalJobs
	})
	time.Sleep(journalJob / 4) // into their work
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := first.Wait()
	killed := time.Now()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("killed worker: %v\n%s", err, out)
	}
	if n := streamMsgs(t, e.js, "done"); n != 0 {
		t.Fatalf("%d jobs done before the kill: want none (each takes %v)", n, journalJob)
	}
	second, out2 := start()
	eventually(t, 2*journalAckWait, "every job done", func() bool { return streamMsgs(t, e.js, "done") == journalJobs })
	took := time.Since(killed)
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("second worker: %v\n%s", err, out2)
	}
	t.Logf("%d jobs of %v held by a process SIGKILLed and started again on its journal: the last done %v after the kill (AckWait %v)\n%s",
		journalJobs, journalJob, took.Round(time.Millisecond), journalAckWait, out2)
	if !strings.Contains(out2.String(), fmt.Sprintf("interrupted runs told: %d, their deliveries %d", journalJobs, journalJobs)) {
		t.Errorf("the second worker was not told of the %d runs the kill interrupted, each on its first delivery: %s", journalJobs, out2)
	}
	if limit := journalJob + 5*time.Second; took > limit {
		t.Fatalf("the last job done %v after the kill: want within %v (its work plus a restart), not after the AckWait", took, limit)
	}
}

// maybeJournalWorker runs the worker of the journal test when the binary
// was started as one, and reports whether it was.
func maybeJournalWorker() bool {
	url := os.Getenv(envJournalURL)
	if url == "" {
		return false
	}
	if err := journalWorker(url, os.Getenv(envJournalPath)); err != nil {
		fmt.Fprintln(os.Stderr, "journal worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// journalWorker runs each job for journalJob, then notes it done, until
// SIGTERM.
func journalWorker(url, journal string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	cons, err := js.Consumer(ctx, "jobs", "crewd")
	if err != nil {
		return err
	}
	pool, err := crew.New(crew.WithWorkers(journalJobs))
	if err != nil {
		return err
	}
	opts := []natsjs.Option{natsjs.WithWindow(0), natsjs.WithConn(nc)}
	var interrupted, delivered atomic.Int64
	if journal != "" {
		opts = append(opts, natsjs.WithJournal(journal), natsjs.WithRecovered(func(_ context.Context, r natsjs.Recovered) {
			if r.Started && strings.HasPrefix(r.Subject, "jobs.") {
				interrupted.Add(1)
			}
			delivered.Add(int64(r.Delivered))
		}))
	}
	src, err := natsjs.New(pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		time.Sleep(journalJob)
		seq := strconv.FormatUint(m.StreamSeq(), 10)
		_, err := js.Publish(ctx, "done."+seq, nil, jetstream.WithMsgID(seq))
		return err
	}, opts...)
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
	fmt.Printf("interrupted runs told: %d, their deliveries %d\n", interrupted.Load(), delivered.Load())
	return pool.Shutdown(sctx, crew.DrainThenHard)
}

// TestJournalIsOneSourcesAtATime: a second Source on a journal another
// holds is refused, and one without a connection too.
func TestJournalIsOneSourcesAtATime(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", time.Second, -1)
	pool, err := crew.New(crew.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Shutdown(context.Background(), crew.Hard)
	h := func(context.Context, *natsjs.Msg) error { return nil }
	path := filepath.Join(t.TempDir(), "held")
	if _, err := natsjs.New(pool, cons, h, natsjs.WithJournal(path)); !errors.Is(err, natsjs.ErrInvalidOption) {
		t.Fatalf("a journal without a connection: %v, want ErrInvalidOption", err)
	}
	a, err := natsjs.New(pool, cons, h, natsjs.WithJournal(path), natsjs.WithConn(e.nc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := natsjs.New(pool, cons, h, natsjs.WithJournal(path), natsjs.WithConn(e.nc)); !errors.Is(err, natsjs.ErrInvalidOption) {
		t.Fatalf("a second Source on a held journal: %v, want ErrInvalidOption", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Stopped, it let the journal go.
	b, err := natsjs.New(pool, cons, h, natsjs.WithJournal(path), natsjs.WithConn(e.nc))
	if err != nil {
		t.Fatalf("a journal after its Source stopped: %v", err)
	}
	bctx, bcancel := context.WithCancel(context.Background())
	go func() { done <- b.Run(bctx) }()
	bcancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

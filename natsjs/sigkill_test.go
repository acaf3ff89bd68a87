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
	"syscall"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The SIGKILL test re-executes the test binary as consumer processes; these
// say what a worker process does.
const (
	envWorkerURL     = "NATSJS_TEST_WORKER_URL"
	envWorkerJournal = "NATSJS_TEST_WORKER_JOURNAL" // the worker's journal
	workerPool       = 8
	workerWindow     = 2
	sigkillJobs      = 10_000
	// The killed process's jobs come back after it; the survivors renew
	// theirs every half of it, and on a loaded machine (three processes,
	// the server and the test on two cores, with -race) a renewal can be a
	// second late: then a survivor's job is redelivered too, and counted
	// as a duplicate beyond what the killed process held.
	sigkillAckWait = 5 * time.Second
)

// TestSIGKILLLosesNothing: three consumer processes share a stream of
// 10,000 jobs; one is killed with SIGKILL mid-run. Every job completes; the
// duplicates (jobs whose completion was recorded twice) are reported and
// stay within what the killed process held.
func TestSIGKILLLosesNothing(t *testing.T) {
	jobs := sigkillJobs
	if testing.Short() {
		jobs = 2000
	}
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	ctx := context.Background()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "done", Subjects: []string{"done.>"}, Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	e.stream(t, "dups", "dups.>")
	e.consumer(t, "jobs", "crewd", sigkillAckWait, -1)
	e.publish(t, "jobs.a", jobs)

	type proc struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	procs := make([]*proc, 3)
	journals := t.TempDir()
	for i := range procs {
		p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^$")}
		// Each keeps a journal, rewritten past 16 KiB (many times over
		// 10,000 jobs): its notes and rewrites under real threads, through
		// the kill.
		p.cmd.Env = append(os.Environ(), envWorkerURL+"="+e.srv.ClientURL(), envWorkerJournal+"="+filepath.Join(journals, fmt.Sprint(i)),
			"NATSJS_TEST_COMPACT_AT=16384")
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = p
	}
	defer func() {
		for _, p := range procs {
			if p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				_ = p.cmd.Wait()
			}
		}
	}()

	eventually(t, 60*time.Second, "a fifth of the jobs done", func() bool { return streamMsgs(t, e.js, "done") >= uint64(jobs/5) })
	if err := procs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := procs[0].cmd.Wait()
	doneAtKill := streamMsgs(t, e.js, "done")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("killed worker: %v\n%s", err, procs[0].out.String())
	}
	if doneAtKill >= uint64(jobs) {
		t.Fatalf("all %d jobs done before the kill: not mid-run", jobs)
	}
	eventually(t, 90*time.Second, "every job done", func() bool { return streamMsgs(t, e.js, "done") == uint64(jobs) })
	cons, err := e.js.Consumer(ctx, "jobs", "crewd")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "every job acked", func() bool {
		info := consumerInfo(t, cons)
		return info.NumAckPending == 0 && info.NumPending == 0
	})
	for i, p := range procs[1:] {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("worker %d after SIGTERM: %v\n%s", i+1, err, p.out.String())
		}
	}
	dups := streamMsgs(t, e.js, "dups")
	t.Logf("%d jobs, 3 processes, one SIGKILLed after %d done: every job done; %d duplicates (bound %d: its pool of %d plus window %d)",
		jobs, doneAtKill, dups, workerPool+workerWindow, workerPool, workerWindow)
	if dups > workerPool+workerWindow {
		t.Fatalf("%d duplicates, more than the %d messages the killed process could hold", dups, workerPool+workerWindow)
	}
}

// maybeWorker runs a consumer process of TestSIGKILLLosesNothing when the
// binary was started as one, and reports whether it was.
func maybeWorker() bool {
	url := os.Getenv(envWorkerURL)
	if url == "" {
		return false
	}
	if err := worker(url, os.Getenv(envWorkerJournal)); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// worker consumes jobs until SIGTERM. Its handler records a completion
// idempotently: done.<seq> with the message id <seq>, which the done
// stream's duplicate window keeps once; a second completion of the same job
// is also noted in dups, which the test counts.
func worker(url, journal string) error {
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
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
	pool, err := crew.New(crew.WithWorkers(workerPool))
	if err != nil {
		return err
	}
	src, err := natsjs.New(pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		time.Sleep(time.Millisecond) // the job
		seq := strconv.FormatUint(m.StreamSeq(), 10)
		ack, err := js.Publish(ctx, "done."+seq, nil, jetstream.WithMsgID(seq))
		if err != nil {
			return err
		}
		if ack.Duplicate {
			if _, err := js.Publish(ctx, "dups."+seq, nil); err != nil {
				return err
			}
		}
		return nil
	}, natsjs.WithWindow(workerWindow), natsjs.WithConn(nc), natsjs.WithBackoff(10*time.Millisecond, 100*time.Millisecond), natsjs.WithJournal(journal))
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
	return pool.Shutdown(sctx, crew.DrainThenHard)
}

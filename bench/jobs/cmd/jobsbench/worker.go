package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The workers of asynq and River run in a process of their own,
// `jobsbench worker -system NAME ...`, so that the kill test can SIGKILL
// them. The process reports on its stdout, one line per event, each
// written with one write(2) so that a line written before a SIGKILL is
// whole in the pipe:
//
//	R                 the workers are started
//	S <job> <unixns>  a run of job <job> started
//	E <job> <unixns>  a run of job <job> ran to its end (before the system records it)

// events writes the worker's event lines.
type events struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *events) line(kind byte, n int) {
	b := make([]byte, 0, 40)
	b = append(b, kind, ' ')
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, time.Now().UnixNano(), 10)
	b = append(b, '\n')
	e.mu.Lock()
	e.w.Write(b) // the parent gone is the end of the benchmark anyway
	e.mu.Unlock()
}

func (e *events) ready() {
	e.mu.Lock()
	io.WriteString(e.w, "R\n")
	e.mu.Unlock()
}

// runJob is every system's job: a sleep, reported at its start and end.
func runJob(ctx context.Context, ev *events, n int, d time.Duration) error {
	ev.line('S', n)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	ev.line('E', n)
	return nil
}

// workerMain is `jobsbench worker`: the workers of one system until
// SIGTERM or SIGINT.
func workerMain(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	system := fs.String("system", "", "asynq, river or crew-jobs")
	addr := fs.String("addr", "", "asynq: the Redis address; river: the Postgres URL; crew-jobs: the NATS URL")
	workers := fs.Int("workers", 32, "jobs run at once")
	queues := fs.Int("queues", 0, "crew-jobs: the named queues to split the workers over (0: the default queue alone)")
	shared := fs.Bool("shared", false, "crew-jobs with -queues: every queue on one pool of the workers")
	cooldown := fs.Duration("fetch-cooldown", 0, "river: FetchCooldown (0: River's default)")
	poll := fs.Duration("fetch-poll-interval", 0, "river: FetchPollInterval (0: River's default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ev := &events{w: os.Stdout}
	switch *system {
	case "asynq":
		return asynqWorker(ctx, ev, *addr, *workers)
	case "river":
		return riverWorker(ctx, ev, *addr, *workers, *cooldown, *poll)
	case "crew-jobs":
		return crewJobsWorker(ctx, ev, *addr, *workers, *queues, *shared)
	}
	return fmt.Errorf("worker: -system %q: want asynq, river or crew-jobs", *system)
}

// workerProc is the parent's handle on a worker process: started, killed
// and started again with the same arguments, its events fed to a tracker.
type workerProc struct {
	args    []string
	logPath string
	t       *tracker

	cmd  *exec.Cmd
	done chan error // the event reader's end, then cmd.Wait's
}

// start starts the process and returns when it reports its workers
// started.
func (w *workerProc) start(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	log, err := os.OpenFile(w.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(self, append([]string{"worker"}, w.args...)...)
	cmd.Stderr = log
	dieWithParent(cmd, syscall.SIGKILL)
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	log.Close() // the child has its own descriptor
	w.cmd = cmd
	ready := make(chan struct{})
	w.done = make(chan error, 1)
	go func() {
		rerr := readEvents(out, w.t, ready)
		werr := cmd.Wait()
		w.done <- errors.Join(rerr, werr)
	}()
	select {
	case <-ready:
		return nil
	case err := <-w.done:
		w.done <- err
		return fmt.Errorf("worker exited before it was ready (%v): %s", err, tail(w.logPath))
	case <-ctx.Done():
		w.kill()
		return ctx.Err()
	}
}

// kill SIGKILLs the process and waits for it and its last events.
func (w *workerProc) kill() {
	if w.cmd == nil {
		return
	}
	w.cmd.Process.Kill()
	<-w.done
	w.cmd = nil
}

// stop asks the process to stop (SIGTERM), then kills it after grace.
func (w *workerProc) stop(grace time.Duration) {
	if w.cmd == nil {
		return
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-w.done:
		w.cmd = nil
	case <-t.C:
		w.kill()
	}
}

// restart is system.Restart for a worker process.
func (w *workerProc) restart(ctx context.Context) (killed, restarted time.Time, err error) {
	w.kill()
	killed = time.Now()
	restarted = time.Now()
	return killed, restarted, w.start(ctx)
}

// readEvents feeds a worker's event lines to t; ready is closed at "R".
func readEvents(r io.Reader, t *tracker, ready chan struct{}) error {
	sc := bufio.NewScanner(r)
	isReady := false
	for sc.Scan() {
		line := sc.Text()
		if line == "R" {
			if !isReady {
				close(ready)
				isReady = true
			}
			continue
		}
		kind, n, at, err := parseEvent(line)
		if err != nil {
			return err
		}
		switch kind {
		case 'S':
			t.start(n)
		case 'E':
			t.end(n, at)
		}
	}
	return sc.Err()
}

func parseEvent(line string) (kind byte, n int, at time.Time, err error) {
	f := strings.Fields(line)
	if len(f) != 3 || len(f[0]) != 1 || (f[0][0] != 'S' && f[0][0] != 'E') {
		return 0, 0, time.Time{}, fmt.Errorf("worker event %q: want S|E <job> <unix ns>", line)
	}
	n, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("worker event %q: %v", line, err)
	}
	ns, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("worker event %q: %v", line, err)
	}
	return f[0][0], n, time.Unix(0, ns), nil
}

// tail is the end of a log file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

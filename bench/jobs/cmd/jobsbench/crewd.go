package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// crewdSystem is crewd, built from this repository, with its embedded NATS
// server (JetStream, its store in a data directory of the scenario's) and
// -workers sc.Workers, driven through its HTTP API: POST /v1/jobs to
// enqueue, GET /v1/jobs/{id} for the end. crewd runs the jobs in its own
// process, so the kill test kills crewd, server and all, and starts it
// again on the same data directory.
//
// crewd's jobs run inside crewd, out of the benchmark's sight: a job's end
// is its record's "finished" time and its runs started are the record's
// "attempts"; whether a run ended twice cannot be seen.
type crewdSystem struct {
	bin string
	tmp string
	env []string // added to crewd's environment (CREW_JOB_QUEUES, ...), which loses any CREW_ variable of the benchmark's own

	sc       scenario
	t        *tracker
	args     []string
	url      string
	logPath  string
	http     *http.Client
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan error
	ids      []string
	final    []bool // the record says the job ended, or it answered 404
	pollers  int
	notFound []int
}

func (s *crewdSystem) Name() string { return "crewd" }

func (s *crewdSystem) Settings() string {
	return "crewd -workers N, embedded NATS server (JetStream file store), HTTP API; defaults otherwise"
}

func (s *crewdSystem) Start(ctx context.Context, sc scenario, t *tracker) error {
	httpPort, err := freePort()
	if err != nil {
		return err
	}
	adminPort, err := freePort()
	if err != nil {
		return err
	}
	data, err := os.MkdirTemp(s.tmp, "crewd-data-")
	if err != nil {
		return err
	}
	s.sc, s.t = sc, t
	s.ids = make([]string, sc.Jobs)
	s.final = make([]bool, sc.Jobs)
	s.pollers = 8
	s.url = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	s.logPath = filepath.Join(s.tmp, "crewd-"+sc.Name+".log")
	s.args = []string{"-http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort), "-admin-addr", fmt.Sprintf("127.0.0.1:%d", adminPort),
		"-workers", strconv.Itoa(sc.Workers), "-data-dir", data, "-shutdown-delay", "0s", "-log-level", "warn"}
	s.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(sc.Producers, s.pollers)}, Timeout: 30 * time.Second}
	return s.start(ctx)
}

// start starts crewd and returns when /readyz answers 200.
func (s *crewdSystem) start(ctx context.Context) error {
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = log, log
	if s.env != nil {
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(v string) bool { return strings.HasPrefix(v, "CREW_") }), s.env...)
	}
	dieWithParent(cmd, syscall.SIGKILL)
	err = cmd.Start()
	log.Close()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/readyz", nil)
		if resp, err := s.http.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("crewd exited (%v): %s", err, tail(s.logPath))
		case <-ctx.Done():
			return fmt.Errorf("crewd not ready: %v: %s", ctx.Err(), tail(s.logPath))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *crewdSystem) Enqueue(ctx context.Context, n int) error {
	body := fmt.Sprintf(`{"kind":"sleep","duration":%q}`, s.sc.Sleep.String())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/jobs", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST /v1/jobs: %d %.200s", resp.StatusCode, b)
	}
	var a struct{ ID string }
	if err := json.Unmarshal(b, &a); err != nil || a.ID == "" {
		return fmt.Errorf("POST /v1/jobs: 202 without an id: %.200s", b)
	}
	s.mu.Lock()
	s.ids[n] = a.ID
	s.mu.Unlock()
	return nil
}

// WaitAll asks for every job's record until it has ended, with a few
// clients, as crewload -wait does; a job still queued or running is asked
// for again after the others. The end is the record's "finished", not the
// time of the answer, so polling late costs nothing in the figures. While
// crewd is down (the kill test) a refused connection is asked again.
func (s *crewdSystem) WaitAll(ctx context.Context) error {
	s.mu.Lock()
	ids := append([]string(nil), s.ids...)
	s.mu.Unlock()
	todo := make(chan int, len(ids))
	for n, id := range ids {
		if id == "" {
			continue // never accepted: the benchmark stops on an enqueue error
		}
		todo <- n
	}
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	left := make(chan struct{})
	var remaining sync.WaitGroup
	remaining.Add(len(todo))
	go func() { remaining.Wait(); close(left) }()
	for range s.pollers {
		wg.Go(func() {
			for {
				var n int
				select {
				case n = <-todo:
				case <-left:
					return
				case <-ctx.Done():
					return
				}
				ended, err := s.poll(ctx, n, ids[n])
				switch {
				case err != nil && ctx.Err() == nil && !errors.Is(err, errCrewdDown):
					errOnce.Do(func() { first = err })
					remaining.Done()
				case ended:
					remaining.Done()
				default:
					todo <- n
					select {
					case <-ctx.Done():
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

var errCrewdDown = errors.New("crewd not answering")

// poll asks for job n's record once; ended reports a final state, recorded
// in the tracker.
func (s *crewdSystem) poll(ctx context.Context, n int, id string) (ended bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/v1/jobs/"+id, nil)
	if err != nil {
		return false, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("%w: %v", errCrewdDown, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, fmt.Errorf("%w: %v", errCrewdDown, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		s.mu.Lock()
		s.notFound = append(s.notFound, n)
		s.final[n] = true
		s.mu.Unlock()
		return true, nil // lost: counted as never ended
	case http.StatusServiceUnavailable:
		return false, errCrewdDown
	default:
		return false, fmt.Errorf("GET /v1/jobs/%s: %d %.200s", id, resp.StatusCode, b)
	}
	var rec struct {
		State    string
		Attempts int
		Finished time.Time
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return false, fmt.Errorf("GET /v1/jobs/%s: %v", id, err)
	}
	if rec.State == "queued" || rec.State == "running" {
		return false, nil
	}
	s.t.setStarts(n, rec.Attempts)
	s.mu.Lock()
	s.final[n] = true
	s.mu.Unlock()
	if rec.State == "succeeded" {
		s.t.end(n, rec.Finished)
	}
	return true, nil
}

func (s *crewdSystem) Restart(ctx context.Context) (killed, restarted time.Time, err error) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	cmd.Process.Kill()
	<-done
	killed = time.Now()
	restarted = time.Now()
	return killed, restarted, s.start(ctx)
}

// StoreState counts the jobs accepted whose record, at its last answer,
// was queued or running. A job that answered 404 is asked once more: a
// 404 that a later answer contradicts was crewd's answer gone wrong, not
// the job lost, and the detail says so.
func (s *crewdSystem) StoreState(ctx context.Context) (int, string, error) {
	s.mu.Lock()
	open := 0
	for n, id := range s.ids {
		if id != "" && !s.final[n] {
			open++
		}
	}
	var lost []string
	for _, n := range s.notFound {
		lost = append(lost, s.ids[n])
	}
	s.mu.Unlock()
	detail := fmt.Sprintf("crewd's records: %d queued or running, %d answered 404", open, len(lost))
	if len(lost) > 0 {
		again := make([]string, len(lost))
		for i, id := range lost {
			again[i] = id + " " + s.askAgain(ctx, id)
		}
		detail += " (asked again: " + strings.Join(again, ", ") + ")"
	}
	return open, detail, nil
}

// askAgain is what crewd answers for job id now: its state, or the
// status code.
func (s *crewdSystem) askAgain(ctx context.Context, id string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/v1/jobs/"+id, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var rec struct{ State string }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&rec) != nil {
		return strconv.Itoa(resp.StatusCode)
	}
	return rec.State
}

func (s *crewdSystem) Stop() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(os.Interrupt)
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		cmd.Process.Kill()
		<-done
	}
	return nil
}

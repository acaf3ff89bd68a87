package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crew-go/crew/service/internal/app"
)

// The tests here run crewd in-process through Main, as its main does: the
// flags, the listeners, the jobs' store, the stop sequence and the exit
// code. The end-to-end tests run the built binary.

// output is what Main writes to one of its writers, read as it comes.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// await waits up to 30 s for re to match the output, and returns the match.
func (o *output) await(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(o.String()); m != nil {
			return m
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s in 30 s:\n%s", re, o.String())
	return nil
}

// crewd is one Main running.
type crewd struct {
	stop         chan os.Signal
	logs, stderr *output
	exit         chan int
	api, metrics string
	client       *http.Client
}

var (
	banner  = regexp.MustCompile(`API on http://(\S+), metrics on http://(\S+)/metrics`)
	started = regexp.MustCompile(`"msg":"crewd started","http":"(http://[^"]+)","admin":"(http://[^"]+)"`)
)

// start runs Main with args (loopback listeners on free ports added) and
// an empty environment, and waits for its started line and its banner.
func start(t *testing.T, args ...string) *crewd {
	t.Helper()
	return startWith(t, func(string) string { return "" }, args...)
}

// startWith is start with the environment getenv.
func startWith(t *testing.T, getenv func(string) string, args ...string) *crewd {
	t.Helper()
	c := &crewd{stop: make(chan os.Signal, 2), logs: &output{}, stderr: &output{}, exit: make(chan int, 1),
		client: &http.Client{Timeout: 10 * time.Second}}
	args = append([]string{"-http-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-shutdown-delay", "0s", "-shutdown-timeout", "5s"}, args...)
	go func() { c.exit <- app.Main(args, getenv, c.stop, c.logs, c.stderr) }()
	t.Cleanup(func() {
		select {
		case <-c.exit:
		default:
			c.stop <- syscall.SIGKILL
			c.stop <- syscall.SIGKILL
			<-c.exit
		}
		c.client.CloseIdleConnections()
	})
	// The started line comes after the banner: waiting for it, a test
	// reads every line of the start.
	m := c.logs.await(t, started)
	c.api, c.metrics = m[1], m[2]
	c.stderr.await(t, banner)
	return c
}

// do sends a request and decodes a JSON answer into out (if not nil).
func (c *crewd) do(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// job posts a sleep job and waits up to 30 s for it to succeed.
func (c *crewd) job(t *testing.T) string {
	t.Helper()
	var rec struct{ ID, State string }
	if code := c.do(t, "POST", c.api+"/v1/jobs", `{"kind":"sleep","duration":"10ms"}`, &rec); code != http.StatusAccepted {
		t.Fatalf("POST /v1/jobs: %d %+v", code, rec)
	}
	c.awaitJob(t, rec.ID, "succeeded")
	return rec.ID
}

func (c *crewd) awaitJob(t *testing.T, id, state string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var rec struct{ State string }
	for time.Now().Before(deadline) {
		if c.do(t, "GET", c.api+"/v1/jobs/"+id, "", &rec) == http.StatusOK && rec.State == state {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s: %q after 30 s, want %s", id, rec.State, state)
}

// term sends SIGTERM and returns the exit code, within 10 s.
func (c *crewd) term(t *testing.T) int {
	t.Helper()
	c.stop <- syscall.SIGTERM
	select {
	case code := <-c.exit:
		c.exit <- code
		return code
	case <-time.After(10 * time.Second):
		t.Fatalf("Main still running 10 s after SIGTERM (shutdown timeout 5 s):\n%s", c.logs)
		return -1
	}
}

// TestMainInMemory: with jobs in memory crewd answers a batch, runs a job,
// serves its metrics, and stops on SIGTERM with exit 0 and a summary line
// that counts the job.
func TestMainInMemory(t *testing.T) {
	c := start(t, "-nats-url", "off")
	var batch struct {
		Sum   json.Number
		Count int
	}
	if code := c.do(t, "POST", c.api+"/v1/factorial", `{"numbers":[3,4,5]}`, &batch); code != http.StatusOK || batch.Sum != "150" || batch.Count != 3 {
		t.Fatalf("POST /v1/factorial: %d %+v, want 3! + 4! + 5! = 150 of 3", code, batch)
	}
	c.job(t)
	resp, err := c.client.Get(c.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"crew_queue_capacity{pool=\"crewd\"}", "crewd_jobs{state=\"succeeded\"} 1", "crewd_jobs_counted 1"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("/metrics has no %s:\n%.500s", want, b)
		}
	}
	if code := c.term(t); code != app.ExitOK {
		t.Fatalf("exit code %d after SIGTERM, want 0:\n%s", code, c.logs)
	}
	stopped := c.logs.await(t, regexp.MustCompile(`"msg":"crewd stopped".*"jobs_succeeded":(\d+)`))
	if stopped[1] != "1" {
		t.Fatalf("summary counts %s jobs succeeded, want 1", stopped[1])
	}
	if !strings.Contains(c.stderr.String(), "terminated: readiness off") {
		t.Fatalf("no stop line on stderr:\n%s", c.stderr)
	}
}

// TestMainWithAStalledCollector: a trace collector that accepts
// connections and never answers (down for the whole run) costs crewd
// nothing it owes: requests and jobs are answered, and SIGTERM stops it
// with exit 0 within its shutdown timeout plus the bounded final flush,
// with a warning that the last spans were not exported.
func TestMainWithAStalledCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, conn := range held {
			conn.Close()
		}
	})
	// The exporter reads the process's environment itself.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // export (and stall) at once
	c := startWith(t, os.Getenv, "-nats-url", "off", "-shutdown-timeout", "2s")
	if !strings.Contains(c.logs.String(), `"tracing":true`) {
		t.Fatalf("tracing is not on:\n%s", c.logs)
	}
	batch := func() {
		t.Helper()
		var b struct{ Count int }
		if code := c.do(t, "POST", c.api+"/v1/factorial", `{"numbers":[3,4,5]}`, &b); code != http.StatusOK || b.Count != 3 {
			t.Fatalf("POST /v1/factorial with the collector stalled: %d %+v", code, b)
		}
	}
	// Spans until an export is stuck on the collector (else the test
	// proves nothing), then more requests and a job while it is.
	for deadline := time.Now().Add(10 * time.Second); ; {
		batch()
		mu.Lock()
		stuck := len(held) > 0
		mu.Unlock()
		if stuck {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("crewd never tried the collector in 10 s: the test proves nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for range 20 {
		batch()
	}
	c.job(t)
	// term bounds the stop at 10 s: 2 s of shutdown, 5 s of final flush.
	if code := c.term(t); code != app.ExitOK {
		t.Fatalf("exit code %d after SIGTERM, want 0:\n%s", code, c.logs)
	}
	c.logs.await(t, regexp.MustCompile(`tracing: the last spans were not all exported`))
}

// TestMainEmbeddedKeepsJobs: with the embedded JetStream server (the
// default), a job's record outlives the process: a second Main on the same
// data directory answers for it.
func TestMainEmbeddedKeepsJobs(t *testing.T) {
	dir := t.TempDir()
	c := start(t, "-data-dir", dir)
	id := c.job(t)
	if code := c.term(t); code != app.ExitOK {
		t.Fatalf("exit code %d, want 0:\n%s", code, c.logs)
	}
	again := start(t, "-data-dir", dir)
	again.awaitJob(t, id, "succeeded")
	if code := again.term(t); code != app.ExitOK {
		t.Fatalf("exit code %d, want 0:\n%s", code, again.logs)
	}
}

// TestMainSchedulesJobsAcrossAStop: a job posted with a delay is 202
// scheduled, reads scheduled with its run_at, outlives crewd's stop on the
// embedded server's store, and runs after its time in the crewd started
// again.
func TestMainSchedulesJobsAcrossAStop(t *testing.T) {
	dir := t.TempDir()
	c := start(t, "-data-dir", dir)
	var rec struct {
		ID, State string
		RunAt     time.Time `json:"run_at"`
	}
	before := time.Now()
	if code := c.do(t, "POST", c.api+"/v1/jobs", `{"kind":"factorial","n":5,"delay":"3s"}`, &rec); code != http.StatusAccepted || rec.State != "scheduled" ||
		rec.RunAt.Before(before.Add(3*time.Second)) {
		t.Fatalf("POST a job due in 3 s: %d %+v, want scheduled with its run_at", code, rec)
	}
	posted := time.Now()
	// The same keyed request, repeated as a client retries: the same job,
	// although its delay, from now, is another time.
	var keyed [2]string
	for i := range keyed {
		req, _ := http.NewRequest("POST", c.api+"/v1/jobs", strings.NewReader(`{"kind":"factorial","n":6,"delay":"1h"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "delayed")
		resp, err := c.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ ID string }
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusAccepted || (i == 1) != (resp.Header.Get("Idempotent-Replayed") == "true") {
			t.Fatalf("keyed POST %d of a job due in 1 h: %d %v %+v", i+1, resp.StatusCode, err, r)
		}
		keyed[i] = r.ID
	}
	if keyed[0] != keyed[1] {
		t.Fatalf("a keyed request with a delay, repeated: jobs %s and %s", keyed[0], keyed[1])
	}
	var got struct {
		State string
		RunAt time.Time `json:"run_at"`
	}
	if code := c.do(t, "GET", c.api+"/v1/jobs/"+rec.ID, "", &got); code != http.StatusOK || got.State != "scheduled" || got.RunAt.Before(posted) {
		t.Fatalf("GET a scheduled job: %d %+v", code, got)
	}
	if code := c.term(t); code != app.ExitOK {
		t.Fatalf("exit code %d, want 0:\n%s", code, c.logs)
	}
	again := start(t, "-data-dir", dir)
	again.awaitJob(t, rec.ID, "succeeded")
	// Due 3 s after crewd took the POST, which was after before: posted,
	// stamped once the answer came back, may be later than that by more
	// than the job takes to end.
	if time.Since(before) < 3*time.Second {
		t.Fatalf("a job due in 3 s ended %v after it was posted", time.Since(before))
	}
	if code := again.term(t); code != app.ExitOK {
		t.Fatalf("exit code %d, want 0:\n%s", code, again.logs)
	}
}

// TestNoBannerOffATerminal: with stderr not a terminal (a container's log
// stream), crewd prints no lines for a person there, and a configuration
// error is the first and only line: the pool, never given a task, does
// not log its stop.
func TestNoBannerOffATerminal(t *testing.T) {
	defer app.SetTerminal(false)()
	c := &crewd{stop: make(chan os.Signal, 2), logs: &output{}, stderr: &output{}, exit: make(chan int, 1)}
	go func() {
		c.exit <- app.Main([]string{"-http-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-nats-url", "off", "-shutdown-delay", "0s"},
			func(string) string { return "" }, c.stop, c.logs, c.stderr)
	}()
	c.logs.await(t, regexp.MustCompile(`"msg":"crewd started"`))
	c.stop <- syscall.SIGTERM
	if code := <-c.exit; code != app.ExitOK {
		t.Fatalf("exit %d", code)
	}
	if c.stderr.String() != "" {
		t.Fatalf("lines for a person off a terminal:\n%s", c.stderr)
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs, stderr output
	code := app.Main([]string{"-data-dir", file, "-http-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, func(string) string { return "" }, make(chan os.Signal), &logs, &stderr)
	if code != app.ExitConfig || !strings.HasPrefix(stderr.String(), "crewd: -data-dir "+file) || strings.Contains(logs.String(), "shutdown") {
		t.Fatalf("exit %d; stderr %q; log %q: want the reason first, and no pool stop", code, &stderr, &logs)
	}
}

// TestMainRefusesToStart: a bad flag, a data directory that is a file and
// a port in use are configuration errors (exit 2) with a line that names
// them (the port's holder by its pid, never advising pkill); nothing is
// left running.
func TestMainRefusesToStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The port is held by this process, which Linux's /proc names; where
	// it cannot be found the message says how to.
	held := fmt.Sprintf("address already in use (this process, %d, holds it already", os.Getpid())
	if runtime.GOOS != "linux" {
		held = "address already in use (another crewd still running?"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-workers", "-1"}, "-workers"},
		{[]string{"-no-such-flag"}, "no-such-flag"},
		{[]string{"-data-dir", file, "-http-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, "-data-dir " + file},
		{[]string{"-nats-url", "off", "-http-addr", ln.Addr().String()}, held},
		{[]string{"-nats-url", "off", "-http-addr", "127.0.0.1:0", "-admin-addr", ln.Addr().String()}, held},
	} {
		var logs, stderr output
		code := app.Main(tc.args, func(string) string { return "" }, make(chan os.Signal), &logs, &stderr)
		if code != app.ExitConfig || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "pkill") {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, app.ExitConfig, tc.want, &stderr)
		}
	}
}

// TestMainRunsPeriodicJobs: a periodic job set through the API on the
// embedded server ticks, each tick a job listed by its kind; set again as
// it is, it is unchanged; bad input is a 400 naming the field; deleted,
// it is gone.
func TestMainRunsPeriodicJobs(t *testing.T) {
	c := start(t, "-data-dir", t.TempDir())
	body := `{"every":"@every 1s","kind":"factorial","n":5}`
	for i, want := range []bool{true, false} {
		var got struct {
			Name, Every, Kind string
			N                 int
			Changed           bool
		}
		if code := c.do(t, "PUT", c.api+"/v1/periodic/heartbeat", body, &got); code != http.StatusOK || got.Changed != want ||
			got.Name != "heartbeat" || got.Every != "@every 1s" || got.Kind != "factorial" || got.N != 5 {
			t.Fatalf("PUT %d: %d %+v, want changed %v", i+1, code, got, want)
		}
	}
	var list struct{ Periodic []map[string]any }
	if code := c.do(t, "GET", c.api+"/v1/periodic", "", &list); code != http.StatusOK || len(list.Periodic) != 1 || list.Periodic[0]["name"] != "heartbeat" {
		t.Fatalf("GET /v1/periodic: %d %+v", code, list)
	}
	if code := c.do(t, "GET", c.api+"/v1/periodic/heartbeat", "", nil); code != http.StatusOK {
		t.Fatalf("GET /v1/periodic/heartbeat: %d", code)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var page struct{ Jobs []struct{ State string } }
		if code := c.do(t, "GET", c.api+"/v1/jobs?kind=factorial&state=succeeded", "", &page); code != http.StatusOK {
			t.Fatalf("GET /v1/jobs: %d", code)
		}
		if len(page.Jobs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ticks' jobs succeeded within 15 s: %d, want 2", len(page.Jobs))
		}
	}
	for _, bad := range []struct{ name, body, want string }{
		{"heartbeat", `{"every":"@every 100ms","kind":"factorial","n":5}`, `"every" "@every 100ms"`},
		{"heartbeat", `{"every":"61 * * * * *","kind":"factorial","n":5}`, `"every" "61 * * * * *"`},
		{"heartbeat", `{"kind":"factorial","n":5}`, `"every" is required`},
		{"heartbeat", `{"every":"@hourly","kind":"factorial","n":5,"delay":"1m"}`, `"delay": a periodic job's ticks say when it runs`},
		{"heartbeat", `{"every":"@hourly","time_zone":"Mars/Olympus","kind":"factorial","n":5}`, `"time_zone" "Mars/Olympus"`},
		{"heartbeat", `{"every":"@hourly","kind":"nope"}`, `kind "nope"`},
		{"heartbeat", `{"every":7,"kind":"factorial","n":5}`, `"every": want a string`},
		{"a.b", `{"every":"@hourly","kind":"factorial","n":5}`, `"name" "a.b"`},
	} {
		var got struct{ Error string }
		if code := c.do(t, "PUT", c.api+"/v1/periodic/"+bad.name, bad.body, &got); code != http.StatusBadRequest || !strings.Contains(got.Error, bad.want) {
			t.Errorf("PUT %s: %d %q, want 400 saying %s", bad.body, code, got.Error, bad.want)
		}
	}
	if code := c.do(t, "DELETE", c.api+"/v1/periodic/heartbeat", "", nil); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d, want 204", code)
	}
	for _, m := range []string{"DELETE", "GET"} {
		if code := c.do(t, m, c.api+"/v1/periodic/heartbeat", "", nil); code != http.StatusNotFound {
			t.Fatalf("%s of a deleted periodic job: %d, want 404", m, code)
		}
	}
	if code := c.term(t); code != app.ExitOK {
		t.Fatalf("exit code %d, want 0:\n%s", code, c.logs)
	}
}

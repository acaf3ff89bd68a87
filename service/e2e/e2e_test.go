// Package e2e tests crewd as it is shipped: the binary built, started on
// loopback ports, loaded over HTTP and stopped with signals.
package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crewd-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "crewd")
	build := exec.Command("go", "build", "-o", binary, "../cmd/crewd")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building crewd:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// crewd is a running crewd process.
type crewd struct {
	cmd         *exec.Cmd
	http, admin string
	nats        string              // the embedded server's URL, with -nats-listen
	lines       chan map[string]any // every log line, parsed
	mu          sync.Mutex
	log         []map[string]any
	exited      chan struct{}
	stderr      bytes.Buffer
}

// start runs crewd on loopback ports, with its jobs in an embedded NATS
// server whose store is a new temporary directory unless args say where
// (-data-dir) or how (-nats-url).
func start(t *testing.T, args ...string) *crewd {
	t.Helper()
	if !slices.Contains(args, "-data-dir") && !slices.Contains(args, "-nats-url") {
		args = append([]string{"-data-dir", t.TempDir()}, args...)
	}
	cmd := exec.Command(binary, append([]string{"-http-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &crewd{cmd: cmd, lines: make(chan map[string]any, 1024), exited: make(chan struct{})}
	cmd.Stderr = &c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.mu.Lock()
				c.log = append(c.log, m)
				c.mu.Unlock()
				select {
				case c.lines <- m:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.exited
	})
	for {
		select {
		case m := <-c.lines:
			if m["msg"] == "crewd started" {
				c.http, c.admin = m["http"].(string), m["admin"].(string)
				c.nats, _ = m["nats"].(string)
				return c
			}
		case <-c.exited:
			t.Fatalf("crewd exited at start: %s", c.stderr.String())
		case <-time.After(20 * time.Second):
			t.Fatal("crewd did not start")
		}
	}
}

func (c *crewd) logLine(msg string) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.log {
		if m["msg"] == msg {
			return m
		}
	}
	return nil
}

// client makes a new connection per request, so that a request after the
// listener closed is refused rather than sent on a closing idle connection.
var client = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// outcome is what became of one POST: an answer (code), a connection
// refused (never connected), a connection reset after it connected, or a
// failure (err), which includes a connection closed unanswered.
type outcome struct {
	code    int
	refused bool  // the connect was refused: the listener had closed
	reset   error // connected, then reset by the peer before a whole answer
	err     error // anything else: closed unanswered (EOF), a timeout (a hang), an answer not whole or not JSON
	jobID   string
	msg     string // the error of an answer that has one
	at      time.Time
}

// resetsAllowed bounds the connections reset in one stop: the kernel's
// reset of a handshake completed in the instant the listener closes (see
// the gate in package app), which crewd cannot answer.
const resetsAllowed = 2

// post posts body to url on a new connection and says what became of it.
// A refusal is a dial error only: the connect itself refused, nothing sent.
// Once connected, a reset (ECONNRESET, or EPIPE on a write after one) is
// what the kernel does to a handshake it completed but the server never
// accepted, when the listener closes; it is also what a server closing a
// connection with a request unread looks like, so callers bound resets
// rather than take them for refusals. An end of the connection without an
// answer (EOF; the transport's "server closed idle connection" when the
// close came before its request went out) is the server dropping what it
// accepted: an err, never a refusal. The transport itself retries, on a
// new connection, a request of which no byte was written.
func post(url, body string) outcome {
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return failed(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return failed(fmt.Errorf("incomplete answer %d: %w", resp.StatusCode, err))
	}
	o := outcome{code: resp.StatusCode}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return outcome{err: fmt.Errorf("answer is not JSON: %q", raw)}
	}
	if resp.StatusCode == http.StatusAccepted {
		o.jobID, _ = m["id"].(string)
	}
	o.msg, _ = m["error"].(string)
	return o
}

// failed classifies a POST's error: see post.
func failed(err error) outcome {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return outcome{refused: true, at: time.Now()}
		case errors.Is(err, syscall.ECONNRESET):
			// The kernel's reset of a handshake under way as the listener
			// closed (resetsAllowed); a fresh clone's test.sh met it once.
			return outcome{reset: err, at: time.Now()}
		}
		return outcome{err: err, at: time.Now()} // a dial timeout: a hang
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return outcome{reset: err, at: time.Now()}
	}
	return outcome{err: err, at: time.Now()}
}

// TestPostTellsARefusalFromACut: post counts as refused only a connect
// that was refused; a connection that connected and was then closed
// unanswered is an err, and one reset a reset, so that the stop tests see
// them.
func TestPostTellsARefusalFromACut(t *testing.T) {
	// serve accepts one connection, reads its request whole and ends it:
	// with a FIN, or with a reset (SO_LINGER 0).
	serve := func(t *testing.T, reset bool) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		t.Cleanup(func() {
			ln.Close()
			<-done
		})
		go func() {
			defer close(done)
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			if req, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
				_, _ = io.Copy(io.Discard, req.Body)
			}
			if reset {
				_ = conn.(*net.TCPConn).SetLinger(0)
			}
		}()
		return "http://" + ln.Addr().String()
	}
	if o := post(serve(t, false)+"/v1/jobs", `{}`); o.err == nil || o.refused || o.reset != nil {
		t.Errorf("a connection closed unanswered: %+v, want an err", o)
	}
	if o := post(serve(t, true)+"/v1/jobs", `{}`); o.reset == nil || o.refused || o.err != nil {
		t.Errorf("a connection reset: %+v, want a reset", o)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	if o := post(closed+"/v1/jobs", `{}`); !o.refused || o.err != nil || o.reset != nil {
		t.Errorf("a closed port: %+v, want refused", o)
	}
}

// TestSIGTERMUnderLoad is the stop a pod goes through, once per shutdown
// mode and per jobs path: crewd under load gets SIGTERM; readiness must
// fail before the listener closes, every request must get a whole answer
// or a refused connection (none hangs, none is closed unanswered; at most
// resetsAllowed reset, the kernel's), and the process must exit 0 by its
// deadline. In memory, every accepted job must reach a terminal state that
// the summary line counts. Through JetStream, every accepted job is either
// finished by this process or left in the stream, and a crewd started again
// on the same data directory runs every one of those to success.
func TestSIGTERMUnderLoad(t *testing.T) {
	for _, path := range []string{"memory", "jetstream"} {
		for _, mode := range []string{"drain-then-hard", "drain", "soft", "soft-then-hard", "hard"} {
			t.Run(path+"/"+mode, func(t *testing.T) { sigtermUnderLoad(t, path, mode) })
		}
	}
}

func sigtermUnderLoad(t *testing.T, path, mode string) {
	const delay, deadline = 300 * time.Millisecond, 10 * time.Second
	dir := t.TempDir()
	args := []string{"-workers", "2", "-queue", "16", "-shutdown-mode", mode,
		"-shutdown-delay", delay.String(), "-shutdown-timeout", deadline.String()}
	if path == "memory" {
		args = append(args, "-nats-url", "off")
	} else {
		args = append(args, "-data-dir", dir)
	}
	c := start(t, args...)

	var (
		stop             atomic.Bool
		mu               sync.Mutex
		outcomes         []outcome
		firstNotReady    time.Time
		firstRefused     time.Time
		readinessRefused time.Time
	)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				var o outcome
				if (g+i)%2 == 0 {
					o = post(c.http+"/v1/jobs", fmt.Sprintf(`{"kind":"sleep","duration":"%dms"}`, 200+i%200))
				} else {
					o = post(c.http+"/v1/factorial", `{"numbers":[`+strings.Repeat("20,", 99)+`20]}`)
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				if o.refused && firstRefused.IsZero() {
					firstRefused = o.at
				}
				mu.Unlock()
				if o.refused {
					return
				}
			}
		})
	}
	wg.Go(func() { // the kubelet's readiness probe
		for !stop.Load() {
			resp, err := client.Get(c.http + "/readyz")
			if err != nil {
				mu.Lock()
				readinessRefused = time.Now()
				mu.Unlock()
				return
			}
			resp.Body.Close()
			if resp.StatusCode == 503 {
				mu.Lock()
				if firstNotReady.IsZero() {
					firstNotReady = time.Now()
				}
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	time.Sleep(500 * time.Millisecond)
	signalled := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
	case <-time.After(deadline + 5*time.Second):
		t.Fatal("crewd did not exit by its deadline")
	}
	took := time.Since(signalled)
	stop.Store(true)
	wg.Wait()

	if code := c.cmd.ProcessState.ExitCode(); code != 0 || took > deadline+time.Second {
		t.Fatalf("exit code %d after %v (deadline %v); stderr: %s", code, took, deadline, c.stderr.String())
	}
	// Its stderr is a pipe, as in a container: none of the lines for a
	// person at a terminal (the banner, the stop line) reach it, the JSON
	// log says the same (package app's tests read them as a terminal does).
	for _, unwanted := range []string{"crewd (pid", "Stop it with Ctrl-C", "curl -X POST", "terminated: readiness off"} {
		if strings.Contains(c.stderr.String(), unwanted) {
			t.Errorf("stderr, not a terminal, has %q: %s", unwanted, c.stderr.String())
		}
	}
	if c.logLine("shutdown: readiness off") == nil {
		t.Error("the JSON log lacks the stop's start")
	}
	if firstNotReady.IsZero() || !firstRefused.IsZero() && !firstNotReady.Before(firstRefused) || !readinessRefused.IsZero() && !firstNotReady.Before(readinessRefused) {
		t.Fatalf("readiness failed at %v, connections refused from %v: readiness must fail first", firstNotReady, firstRefused)
	}
	if d := firstNotReady.Sub(signalled); d > delay {
		t.Fatalf("readiness failed %v after SIGTERM, later than the delay %v", d, delay)
	}
	var accepted []string
	codes := map[int]int{}
	msgs := map[string]int{}
	var (
		refused int
		resets  []string
	)
	for _, o := range outcomes {
		switch {
		case o.err != nil:
			t.Fatalf("a request neither answered nor refused at connect: %v", o.err)
		case o.refused || o.reset != nil:
			if o.at.Before(firstNotReady) {
				t.Fatalf("a connection refused or reset at %v (%v), before readiness failed at %v", o.at, o.reset, firstNotReady)
			}
			if o.reset != nil {
				resets = append(resets, o.reset.Error())
			} else {
				refused++
			}
		default:
			codes[o.code]++
			if o.msg != "" {
				msgs[o.msg]++
			}
			if o.jobID != "" {
				accepted = append(accepted, o.jobID)
			}
		}
	}
	if len(accepted) == 0 || codes[200] == 0 {
		t.Fatalf("no load went through: %v", codes)
	}
	for code := range codes {
		if code != 200 && code != 202 && code != 503 {
			t.Fatalf("unexpected status %d: %v %v", code, codes, msgs)
		}
	}
	end := c.logLine("crewd stopped")
	if end == nil || end["exit_code"] != float64(0) {
		t.Fatalf("summary line: %v", end)
	}
	count := func(key string) int { return int(end["jobs_"+key].(float64)) }
	pool := end["pool"].(map[string]any)
	if pool["in_flight"] != float64(0) || pool["workers"] != float64(0) {
		t.Fatalf("pool at exit: %v", pool)
	}
	t.Logf("%s: %d requests (%v %v), %d refused at connect, %d reset %v, %d jobs accepted, exit after %v; summary %v", mode, len(outcomes), codes, msgs, refused, len(resets), resets, len(accepted), took.Round(time.Millisecond), end)
	if len(resets) > resetsAllowed {
		t.Fatalf("%d connections reset, at most %d expected: %v", len(resets), resetsAllowed, resets)
	}

	if path == "jetstream" {
		// Nothing is lost: what did not end here waits in the stream.
		ended := count("succeeded") + count("failed") + count("timed_out")
		if count("succeeded") != ended || ended+count("pending") != len(accepted) || count("skipped") != 0 {
			t.Fatalf("%d jobs accepted (202), the summary counts %d ended and %d pending: %v", len(accepted), ended, count("pending"), end)
		}
		if mode != "hard" && count("requeued") != 0 {
			t.Fatalf("a %s stop interrupted running jobs (of 200-400 ms, with a deadline of %v): %v", mode, deadline, end)
		}
		src := end["source"].(map[string]any)
		if src["in_flight"] != float64(0) || src["received"].(float64) != src["acked"].(float64)+src["handed_back"].(float64) {
			t.Fatalf("the source left jobs unsettled: %v", src)
		}
		again := start(t, "-data-dir", dir, "-shutdown-delay", "0s")
		for _, id := range accepted {
			waitJob(t, again, id, "succeeded", 30*time.Second)
		}
		return
	}
	if count("queued") != 0 || count("running") != 0 {
		t.Fatalf("jobs left unfinished: %v", end)
	}
	total := count("succeeded") + count("failed") + count("timed_out") + count("canceled") + count("not_run")
	if total != len(accepted) {
		t.Fatalf("%d jobs accepted (202), the summary counts %d: %v", len(accepted), total, end)
	}
	// The queue is full at the signal (jobs of 200-400 ms and batches of 100
	// tasks on 2 workers): each mode leaves its mark on it.
	dropped := pool["dropped"].(float64)
	switch mode {
	case "drain", "drain-then-hard":
		if count("succeeded") != len(accepted) || dropped != 0 {
			t.Fatalf("draining left work unrun: %v", end)
		}
	case "soft", "soft-then-hard":
		if dropped == 0 || count("canceled") != 0 {
			t.Fatalf("a soft stop should drop the queue and let running jobs finish: %v", end)
		}
	case "hard":
		if dropped == 0 {
			t.Fatalf("a hard stop should drop the queue: %v", end)
		}
	}
}

// job is a job's record as GET /v1/jobs/{id} shows it.
type job struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Error    string `json:"error"`
	Attempts int    `json:"attempts"`
}

func getJob(c *crewd, id string) (job, int, error) {
	resp, err := client.Get(c.http + "/v1/jobs/" + id)
	if err != nil {
		return job{}, 0, err
	}
	defer resp.Body.Close()
	var j job
	err = json.NewDecoder(resp.Body).Decode(&j)
	return j, resp.StatusCode, err
}

// waitJob polls job id on c until it is in state want, within limit (a
// bound for liveness).
func waitJob(t *testing.T, c *crewd, id, want string, limit time.Duration) job {
	t.Helper()
	var (
		j    job
		code int
		err  error
	)
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if j, code, err = getJob(c, id); err == nil && code == 200 && j.State == want {
			return j
		}
	}
	t.Fatalf("job %s: %d %+v %v, want %s within %v", id, code, j, err, want, limit)
	return j
}

// TestSecondSignalStopsHard: a second signal during the stop cancels what
// runs and exits at once, long before the deadline. In memory the job is
// lost (canceled); through JetStream it is handed back, queued again, and
// a crewd started again on the same data directory runs it a second time.
func TestSecondSignalStopsHard(t *testing.T) {
	for _, path := range []string{"memory", "jetstream"} {
		t.Run(path, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"-shutdown-delay", "10s", "-shutdown-timeout", "30s", "-max-job-timeout", "1m"}
			if path == "memory" {
				args = append(args, "-nats-url", "off")
			} else {
				args = append(args, "-data-dir", dir)
			}
			c := start(t, args...)
			o := post(c.http+"/v1/jobs", `{"kind":"sleep","duration":"50s","timeout":"55s"}`)
			if o.code != 202 {
				t.Fatalf("job: %+v", o)
			}
			waitJob(t, c, o.jobID, "running", 10*time.Second)
			signalled := time.Now()
			_ = c.cmd.Process.Signal(syscall.SIGTERM)
			time.Sleep(200 * time.Millisecond)
			_ = c.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-c.exited:
			case <-time.After(10 * time.Second):
				t.Fatal("a second signal did not stop crewd")
			}
			end := c.logLine("crewd stopped")
			if time.Since(signalled) > 5*time.Second || c.cmd.ProcessState.ExitCode() != 0 || end == nil {
				t.Fatalf("after %v, exit %d, summary %v", time.Since(signalled), c.cmd.ProcessState.ExitCode(), end)
			}
			if path == "memory" {
				if end["jobs_canceled"] != float64(1) {
					t.Fatalf("summary %v", end)
				}
				return
			}
			if end["jobs_requeued"] != float64(1) || end["jobs_pending"] != float64(1) {
				t.Fatalf("the interrupted job was not handed back: %v", end)
			}
			again := start(t, "-data-dir", dir, "-max-job-timeout", "1m")
			j := waitJob(t, again, o.jobID, "running", 10*time.Second)
			if j.Attempts != 2 {
				t.Fatalf("the job's second run: %+v", j)
			}
		})
	}
}

// TestBadStartExitsTwo: a bad setting, a port in use or a data directory
// that cannot be used stops crewd at start with status 2 and a message
// naming it; a NATS server that cannot be reached, with status 1 (so that
// Kubernetes restarts the pod with backoff).
func TestBadStartExitsTwo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	busy := t.TempDir()
	start(t, "-data-dir", busy) // holds it
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close() // nothing listens there now
	// The port in use is held by this test's process, which Linux's /proc
	// names; where it cannot be found the message says how to.
	held := fmt.Sprintf(`address already in use (process %d ("`, os.Getpid())
	if runtime.GOOS != "linux" {
		held = "address already in use (another crewd still running?"
	}
	for _, tc := range []struct {
		args []string
		env  string
		code int
		says string
	}{
		{args: []string{"-workers", "-3"}, code: 2, says: "-workers -3"},
		{env: "CREW_SHUTDOWN_TIMEOUT=soon", code: 2, says: "CREW_SHUTDOWN_TIMEOUT"},
		{args: []string{"-http-addr", ln.Addr().String()}, code: 2, says: held},
		{args: []string{"-nats-url", "localhost:4222"}, code: 2, says: "-nats-url"},
		{args: []string{"-data-dir", filepath.Join(file, "sub")}, code: 2, says: "-data-dir " + filepath.Join(file, "sub")},
		{args: []string{"-data-dir", busy}, code: 2, says: "in use by another process"},
		{env: "CREW_NATS_URL=nats://" + closed.Addr().String(), code: 1, says: "-nats-url"},
		{args: []string{"-http-addr", "0.0.0.0:0"}, code: 2, says: "without -api-tokens: anyone who reaches it could submit"},
		{env: "CREW_HTTP_ADDR=:0", args: []string{"-http-addr", ":0"}, code: 2, says: "crewd token new"},
		{args: []string{"-api-tokens", filepath.Join(file, "tokens")}, code: 2, says: "-api-tokens"},
		{args: []string{"-api-tokens", badTokens(t)}, code: 2, says: "line 1: token ops: its hash must read sha256:"},
	} {
		args := append([]string{"-http-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, tc.args...)
		if !slices.Contains(args, "-data-dir") {
			args = append(args, "-data-dir", t.TempDir())
		}
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), tc.env)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(stderr.String(), tc.says) {
			t.Errorf("crewd %v %s: %v, stderr %q; want exit %d saying %q", tc.args, tc.env, err, stderr.String(), tc.code, tc.says)
		}
	}
	out, err := exec.Command(binary, "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CREW_SHUTDOWN_MODE") || !strings.Contains(string(out), "CREW_NATS_URL") {
		t.Fatalf("crewd -h: %v\n%s", err, out)
	}
}

// load posts sleep jobs of 50-100 ms from 8 clients until n are accepted
// or the connection is refused (the process is gone), and returns the ids
// accepted.
func load(c *crewd, n int) []string {
	var (
		mu  sync.Mutex
		ids []string
		wg  sync.WaitGroup
	)
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				mu.Lock()
				enough := len(ids) >= n
				mu.Unlock()
				if enough {
					return
				}
				o := post(c.http+"/v1/jobs", fmt.Sprintf(`{"kind":"sleep","duration":"%dms"}`, 50+(g*7+i*13)%51))
				if o.refused || o.reset != nil || o.err != nil {
					return // the process is gone: killed mid-request or refusing
				}
				if o.jobID != "" {
					mu.Lock()
					ids = append(ids, o.jobID)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return ids
}

// TestSIGKILLLosesNoJob is the proof of the durable path: crewd killed with
// SIGKILL mid-load and started again on the same data directory runs every
// job it answered 202 for to success. Jobs that were running at the kill
// run again (after the ack wait): their records count 2 attempts, and the
// test reports them.
func TestSIGKILLLosesNoJob(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-data-dir", dir, "-workers", "4", "-nats-ack-wait", "2s", "-shutdown-delay", "0s"}
	c := start(t, args...)
	var (
		accepted []string
		wg       sync.WaitGroup
	)
	wg.Go(func() { accepted = load(c, 200) })
	// Kill it once a third of the jobs are accepted: a backlog queued, some
	// running, some done.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp, err := client.Get(c.admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := metric(string(raw), `crewd_http_requests_total{code="202",method="POST",route="/v1/jobs"}`); n >= 70 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no load went through")
		}
	}
	killed := time.Now()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c.exited
	wg.Wait()
	first := len(accepted)

	c = start(t, args...)
	restarted := time.Since(killed)
	accepted = append(accepted, load(c, 200-first)...)
	states := map[string]int{}
	for _, id := range accepted {
		j, _, err := getJob(c, id)
		if err != nil {
			t.Fatal(err)
		}
		states[j.State]++
	}
	t.Logf("%d jobs accepted before the kill, %d after; right after the restart (%v later): %v", first, len(accepted)-first, restarted.Round(time.Millisecond), states)
	var again []string
	for _, id := range accepted {
		if j := waitJob(t, c, id, "succeeded", 30*time.Second); j.Attempts > 1 {
			again = append(again, fmt.Sprintf("%s:%d", id, j.Attempts))
		}
	}
	took := time.Since(killed)
	// The job source's metrics beside the pool's.
	resp, err := client.Get(c.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	acked := metric(string(raw), `natsjs_messages_total{consumer="crewd",outcome="acked",stream="jobs"}`)
	if acked == 0 || !strings.Contains(string(raw), `natsjs_consumer_lag{consumer="crewd",stream="jobs"} 0`) || !strings.Contains(string(raw), `crew_workers{pool="crewd"}`) {
		t.Fatalf("/metrics after the jobs ran (acked %v):\n%s", acked, raw)
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.exited
	end := c.logLine("crewd stopped")
	if end == nil || end["jobs_pending"] != float64(0) {
		t.Fatalf("jobs left after all succeeded: %v", end)
	}
	t.Logf("all %d succeeded %v after the kill; %d ran twice (interrupted by the kill): %v; after the restart: %d runs ended here, %d redelivered jobs skipped as already finished",
		len(accepted), took.Round(time.Millisecond), len(again), again, int(end["jobs_succeeded"].(float64)), int(end["jobs_skipped"].(float64)))
	if first == 0 || first == 200 {
		t.Fatalf("the kill was not mid-load: %d of 200 accepted before it", first)
	}
}

// metric reads one sample's value from a Prometheus text exposition.
func metric(text, series string) float64 {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

// TestExternalNATS: a crewd given -nats-url runs jobs from, and answers for
// jobs of, the stream another crewd's embedded server holds: two replicas
// on one NATS. When that server goes, the replica's readiness fails and new
// jobs are refused with 503, and it still stops cleanly.
func TestExternalNATS(t *testing.T) {
	a := start(t, "-nats-listen", "127.0.0.1:0", "-nats-ack-wait", "2s")
	if !strings.HasPrefix(a.nats, "nats://127.0.0.1:") {
		t.Fatalf("the embedded server's URL: %q", a.nats)
	}
	b := start(t, "-nats-url", a.nats, "-shutdown-delay", "100ms")
	var ids []string
	for i := range 20 {
		to := a
		if i%2 == 0 {
			to = b
		}
		o := post(to.http+"/v1/jobs", `{"kind":"sleep","duration":"50ms"}`)
		if o.code != 202 {
			t.Fatalf("job on %s: %+v", to.http, o)
		}
		ids = append(ids, o.jobID)
	}
	for _, id := range ids {
		waitJob(t, a, id, "succeeded", 10*time.Second)
		waitJob(t, b, id, "succeeded", 10*time.Second)
	}

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := client.Get(b.http + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("readiness still passes with the NATS server gone")
		}
	}
	if o := post(b.http+"/v1/jobs", `{"kind":"sleep","duration":"50ms"}`); o.code != 503 {
		t.Fatalf("a job with the NATS server gone: %+v", o)
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("crewd without its NATS server did not stop")
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 || b.logLine("crewd stopped") == nil {
		t.Fatalf("exit %d without its NATS server; stderr %s", code, b.stderr.String())
	}
}

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
	lines       chan map[string]any // every log line, parsed
	mu          sync.Mutex
	log         []map[string]any
	exited      chan struct{}
	stderr      bytes.Buffer
}

func start(t *testing.T, args ...string) *crewd {
	t.Helper()
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

type outcome struct {
	code    int
	refused bool // the connection was refused or dropped unserved: the listener had closed
	err     error
	jobID   string
	msg     string // the error of an answer that has one
	at      time.Time
}

func post(url, body string) outcome {
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		// Refused once the listener is closed; a connection the kernel had
		// queued but the server never accepted is reset when the listener
		// closes, before a byte of it was read: dropped unserved, the same
		// for the client. Anything else (a timeout: a hang) is a failure.
		var se syscall.Errno
		if errors.As(err, &se) && (se == syscall.ECONNREFUSED || se == syscall.ECONNRESET) || errors.Is(err, io.EOF) {
			return outcome{refused: true, at: time.Now()}
		}
		return outcome{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return outcome{err: fmt.Errorf("incomplete answer: %w", err)}
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

// TestSIGTERMUnderLoad is the stop a pod goes through, once per shutdown
// mode: crewd under load gets SIGTERM; readiness must fail before the
// listener closes, every request must get a whole answer or a refused
// connection (none hangs), every accepted job must reach a terminal state
// that the summary line counts, and the process must exit 0 by its
// deadline.
func TestSIGTERMUnderLoad(t *testing.T) {
	for _, mode := range []string{"drain-then-hard", "drain", "soft", "soft-then-hard", "hard"} {
		t.Run(mode, func(t *testing.T) {
			const delay, deadline = 300 * time.Millisecond, 10 * time.Second
			c := start(t, "-workers", "2", "-queue", "16", "-shutdown-mode", mode,
				"-shutdown-delay", delay.String(), "-shutdown-timeout", deadline.String())

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
			if firstNotReady.IsZero() || !firstRefused.IsZero() && !firstNotReady.Before(firstRefused) || !readinessRefused.IsZero() && !firstNotReady.Before(readinessRefused) {
				t.Fatalf("readiness failed at %v, connections refused from %v: readiness must fail first", firstNotReady, firstRefused)
			}
			if d := firstNotReady.Sub(signalled); d > delay {
				t.Fatalf("readiness failed %v after SIGTERM, later than the delay %v", d, delay)
			}
			accepted := 0
			codes := map[int]int{}
			msgs := map[string]int{}
			for _, o := range outcomes {
				switch {
				case o.err != nil:
					t.Fatalf("a request neither answered nor refused: %v", o.err)
				case o.refused:
					if o.at.Before(firstNotReady) {
						t.Fatalf("a connection dropped at %v, before readiness failed at %v", o.at, firstNotReady)
					}
				default:
					codes[o.code]++
					if o.msg != "" {
						msgs[o.msg]++
					}
					if o.jobID != "" {
						accepted++
					}
				}
			}
			if accepted == 0 || codes[200] == 0 {
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
			count := func(state string) int { return int(end["jobs_"+state].(float64)) }
			if count("queued") != 0 || count("running") != 0 {
				t.Fatalf("jobs left unfinished: %v", end)
			}
			total := count("succeeded") + count("failed") + count("timed_out") + count("canceled") + count("not_run")
			if total != accepted {
				t.Fatalf("%d jobs accepted (202), the summary counts %d: %v", accepted, total, end)
			}
			// The queue is full at the signal (jobs of 200-400 ms and batches
			// of 100 tasks on 2 workers): each mode leaves its mark on it.
			pool := end["pool"].(map[string]any)
			dropped := pool["dropped"].(float64)
			switch mode {
			case "drain", "drain-then-hard":
				if count("succeeded") != accepted || dropped != 0 {
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
			if pool["in_flight"] != float64(0) || pool["workers"] != float64(0) {
				t.Fatalf("pool at exit: %v", pool)
			}
			t.Logf("%s: %d requests (%v %v), %d jobs accepted, exit after %v; summary %v", mode, len(outcomes), codes, msgs, accepted, took.Round(time.Millisecond), end)
		})
	}
}

// TestSecondSignalStopsHard: a second signal during the stop cancels what
// runs and exits at once, long before the deadline.
func TestSecondSignalStopsHard(t *testing.T) {
	c := start(t, "-shutdown-delay", "10s", "-shutdown-timeout", "30s", "-max-job-timeout", "1m")
	if o := post(c.http+"/v1/jobs", `{"kind":"sleep","duration":"50s","timeout":"55s"}`); o.code != 202 {
		t.Fatalf("job: %+v", o)
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not stop crewd")
	}
	end := c.logLine("crewd stopped")
	if time.Since(start) > 5*time.Second || c.cmd.ProcessState.ExitCode() != 0 || end == nil || end["jobs_canceled"] != float64(1) {
		t.Fatalf("after %v, exit %d, summary %v", time.Since(start), c.cmd.ProcessState.ExitCode(), end)
	}
}

// TestBadStartExitsTwo: a bad setting or a port in use stops crewd at
// start with status 2 and a message naming it.
func TestBadStartExitsTwo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		args []string
		env  string
		says string
	}{
		{args: []string{"-workers", "-3"}, says: "-workers -3"},
		{env: "CREW_SHUTDOWN_TIMEOUT=soon", says: "CREW_SHUTDOWN_TIMEOUT"},
		{args: []string{"-http-addr", ln.Addr().String()}, says: "address already in use"},
	} {
		cmd := exec.Command(binary, append([]string{"-admin-addr", "127.0.0.1:0"}, tc.args...)...)
		cmd.Env = append(os.Environ(), tc.env)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.says) {
			t.Errorf("crewd %v %s: %v, stderr %q; want exit 2 saying %q", tc.args, tc.env, err, stderr.String(), tc.says)
		}
	}
	out, err := exec.Command(binary, "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CREW_SHUTDOWN_MODE") {
		t.Fatalf("crewd -h: %v\n%s", err, out)
	}
}

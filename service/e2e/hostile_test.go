package e2e_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// addrOf is the host:port of an http:// URL.
func addrOf(url string) string { return strings.TrimPrefix(url, "http://") }

// rawAnswer is an answer read off a raw connection.
type rawAnswer struct {
	code  int
	close bool // Connection: close
	body  map[string]any
	raw   string
}

// roundTrip writes req as it is on conn and reads the answer, within 20 s
// (a bound for a hang, not a wait).
func roundTrip(conn net.Conn, br *bufio.Reader, req string) (rawAnswer, error) {
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		return rawAnswer{}, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return rawAnswer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return rawAnswer{}, err
	}
	a := rawAnswer{code: resp.StatusCode, close: resp.Close, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a, nil
}

// raw sends one request on a new connection.
func raw(t *testing.T, url, req string) rawAnswer {
	t.Helper()
	conn, err := net.Dial("tcp", addrOf(url))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	a, err := roundTrip(conn, bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("%.60q: %v", req, err)
	}
	return a
}

func get(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n" }

func postJSON(path, body string, headers ...string) string {
	h := ""
	for _, x := range headers {
		h += x + "\r\n"
	}
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s", path, len(body), h, body)
}

// TestLongJobIDIsA404: a job id of 5000 bytes, which would make a NATS
// control line over the server's 4 KB and cost the connection, is an
// unknown job like any other; readiness, liveness and the job API are
// untouched, with the embedded server and with a shared one.
func TestLongJobIDIsA404(t *testing.T) {
	a := start(t, "-nats-listen", "127.0.0.1:0")
	b := start(t, "-nats-url", a.nats)
	for _, c := range []*crewd{a, b} {
		for _, id := range []string{strings.Repeat("a", 5000), strings.Repeat("a", 4020), "a.*.>", "%2e%2e"} {
			ans := raw(t, c.http, get("/v1/jobs/"+id))
			if msg, _ := ans.body["error"].(string); ans.code != 404 || !strings.Contains(msg, "a job id is 16 lowercase hex digits") {
				t.Fatalf("GET a %d-byte id: %d %s", len(id), ans.code, ans.raw)
			}
		}
		for _, probe := range []string{"/readyz", "/healthz"} {
			if ans := raw(t, c.http, get(probe)); ans.code != 200 {
				t.Fatalf("%s after long ids: %d %s", probe, ans.code, ans.raw)
			}
		}
		o := post(c.http+"/v1/jobs", `{"kind":"factorial","n":5}`)
		if o.code != 202 {
			t.Fatalf("a job after long ids: %+v", o)
		}
		waitJob(t, c, o.jobID, "succeeded", 10*time.Second)
	}
}

// TestErrorsBeforeTheHandlers: what crewd can answer in its JSON shape it
// does (the admin port's 404, headers over 64 KiB); what net/http answers
// before any handler runs (headers over 1 MB, a request line with a
// malformed escape) is its plain text, answered at once, the connection
// closed: documented, never a hang.
func TestErrorsBeforeTheHandlers(t *testing.T) {
	c := start(t, "-nats-url", "off")
	if ans := raw(t, c.admin, get("/nowhere")); ans.code != 404 || !strings.Contains(fmt.Sprint(ans.body["error"]), "no such endpoint") {
		t.Fatalf("admin 404: %d %s", ans.code, ans.raw)
	}
	big := "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: " + strings.Repeat("b", 100<<10) + "\r\n\r\n"
	if ans := raw(t, c.http, big); ans.code != 431 || !strings.Contains(fmt.Sprint(ans.body["error"]), "request line and headers of about") || !ans.close {
		t.Fatalf("100 KiB of headers: %d %.200s", ans.code, ans.raw)
	}
	// net/http answers before the client has finished writing: the write
	// goes on beside the read.
	conn, err := net.Dial("tcp", addrOf(c.http))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		_, _ = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: "+strings.Repeat("b", 2<<20)+"\r\n\r\n")
	}()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("2 MiB of headers: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 431 || json.Valid(body) {
		t.Fatalf("2 MiB of headers: %d %.200s (net/http's plain text expected)", resp.StatusCode, body)
	}
	if ans := raw(t, c.http, get("/v1/jobs/%zz")); ans.code != 400 || ans.body != nil {
		t.Fatalf("a malformed escape: %d %.200s (net/http's plain text expected)", ans.code, ans.raw)
	}
	if ans := raw(t, c.http, get("/healthz")); ans.code != 200 {
		t.Fatalf("healthz after: %d %q", ans.code, ans.raw)
	}
}

// cutter is a TCP proxy in front of a NATS server that can end its
// clients' connections the way the server does for a protocol error: an
// -ERR, then the close. nats.go does not reconnect after that.
type cutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutter(t *testing.T, upstream string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutter{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, down, up)
			p.mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(up, down); up.Close() })
			wg.Go(func() { _, _ = io.Copy(down, up); down.Close() })
		}
	})
	return p
}

// cut sends every client the server's answer to a control line over 4 KB
// and closes the connections.
func (p *cutter) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.conns {
		if i%2 == 0 {
			_, _ = io.WriteString(c, "-ERR 'Maximum Control Line Exceeded'\r\n")
		}
		c.Close()
	}
	p.conns = nil
}

// TestConnectionClosedForGoodFailsLiveness: when the server closes crewd's
// connection for good, crewd says so at ERROR (not as its own close, at
// INFO), /healthz fails, and the job source's end stops crewd with exit
// code 1, so that the pod is restarted.
func TestConnectionClosedForGoodFailsLiveness(t *testing.T) {
	a := start(t, "-nats-listen", "127.0.0.1:0")
	proxy := newCutter(t, strings.TrimPrefix(a.nats, "nats://"))
	b := start(t, "-nats-url", "nats://"+proxy.ln.Addr().String(), "-shutdown-delay", "3s")
	if ans := raw(t, b.http, get("/healthz")); ans.code != 200 {
		t.Fatalf("healthz before: %d", ans.code)
	}
	proxy.cut()
	failing := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !failing; time.Sleep(10 * time.Millisecond) {
		conn, err := net.Dial("tcp", addrOf(b.http))
		if err != nil {
			break // exited already
		}
		ans, err := roundTrip(conn, bufio.NewReader(conn), get("/healthz"))
		conn.Close()
		failing = err == nil && ans.code == 503 && strings.Contains(ans.raw, "closed for good")
	}
	select {
	case <-b.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("crewd went on after its connection was closed for good")
	}
	if !failing {
		t.Fatal("/healthz never failed with the connection closed for good")
	}
	line := b.logLine("NATS connection closed for good by the server; crewd stops, /healthz fails meanwhile")
	if line == nil || line["level"] != "ERROR" || !strings.Contains(strings.ToLower(fmt.Sprint(line["error"])), "maximum control line exceeded") {
		t.Fatalf("the close's log line: %v", line)
	}
	if b.logLine("NATS connection closed") != nil {
		t.Fatal("the server's close logged as crewd's own")
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
}

// TestStalledBodyIsCut: a POST that sends its headers and one byte of a
// 100-byte body is answered 408 once the request timeout has passed; and
// one stalled the same way, beside a connection that sends nothing, does
// not hold a stop, which ends long before its deadline.
func TestStalledBodyIsCut(t *testing.T) {
	const deadline = 20 * time.Second
	c := start(t, "-nats-url", "off", "-request-timeout", "2s", "-shutdown-delay", "100ms", "-shutdown-timeout", deadline.String())
	stall := func() (net.Conn, *bufio.Reader) {
		conn, err := net.Dial("tcp", addrOf(c.http))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := io.WriteString(conn, "POST /v1/factorial HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		return conn, bufio.NewReader(conn)
	}
	conn, br := stall()
	sent := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("a stalled body, no answer after %v: %v", time.Since(sent), err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(sent); resp.StatusCode != 408 || !resp.Close || took > 10*time.Second {
		t.Fatalf("a stalled body: %d %s after %v", resp.StatusCode, body, took)
	}

	conn, br = stall()
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	// And one that sends nothing at all (http.Server would wait 5 s for
	// it; crewd closes it a second after the listener).
	silent, err := net.Dial("tcp", addrOf(c.http))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The request must have reached a handler: a probe on another
	// connection answered after it was written is no proof, so the stop
	// is simply signalled; the cut holds for a read that starts later too.
	signalled := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
	case <-time.After(deadline + 5*time.Second):
		t.Fatal("crewd did not exit")
	}
	took := time.Since(signalled)
	t.Logf("stopped %v after SIGTERM with a stalled body and a silent connection open (delay 100ms, deadline %v)", took.Round(time.Millisecond), deadline)
	if took > 4*time.Second || c.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("the stop with a stalled body took %v (deadline %v), exit %d", took, deadline, c.cmd.ProcessState.ExitCode())
	}
	if resp, err := http.ReadResponse(br, nil); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 408 {
			t.Fatalf("the stalled body at the stop: %d", resp.StatusCode)
		}
	} // or closed unanswered: it never sent a request
}

// TestKeepAliveAtTheStop: clients on keep-alive connections post without
// a pause through a stop. Every request written on an open connection is
// answered whole; from the stop on the answers say Connection: close, so
// that a request sent as the listener closes is on a new connection,
// answered or refused at connect, never met with EOF or a reset.
func TestKeepAliveAtTheStop(t *testing.T) {
	c := start(t, "-nats-url", "off", "-workers", "2", "-shutdown-delay", "300ms", "-shutdown-timeout", "10s")
	var (
		wg                          sync.WaitGroup
		answered, closes, refusedAt atomic.Int64
		mu                          sync.Mutex
		lost                        []string
	)
	req := postJSON("/v1/factorial", `{"numbers":[20,20,20,20,20,20,20,20,20,20]}`)
	for range 8 {
		wg.Go(func() {
			var conn net.Conn
			var br *bufio.Reader
			defer func() {
				if conn != nil {
					conn.Close()
				}
			}()
			fresh := false
			for {
				if conn == nil {
					var err error
					if conn, err = net.Dial("tcp", addrOf(c.http)); err != nil {
						refusedAt.Add(1)
						return // the listener has closed
					}
					br, fresh = bufio.NewReader(conn), true
				}
				ans, err := roundTrip(conn, br, req)
				if err != nil && fresh {
					// A connection the kernel queued and the server never
					// accepted is reset as the listener closes, before a
					// byte was read: refused, for the client.
					refusedAt.Add(1)
					return
				}
				fresh = false
				if err != nil {
					var se syscall.Errno
					what := err.Error()
					if errors.Is(err, io.EOF) || errors.As(err, &se) {
						what = "cut unanswered: " + what
					}
					mu.Lock()
					lost = append(lost, what)
					mu.Unlock()
					return
				}
				answered.Add(1)
				if ans.code != 200 && ans.code != 503 {
					mu.Lock()
					lost = append(lost, fmt.Sprintf("answer %d %s", ans.code, ans.raw))
					mu.Unlock()
				}
				if ans.close {
					closes.Add(1)
					conn.Close()
					conn = nil
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // load before the stop; not a synchronisation
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	<-c.exited
	t.Logf("%d answers, %d with Connection: close, %d clients refused at connect", answered.Load(), closes.Load(), refusedAt.Load())
	if len(lost) > 0 {
		t.Fatalf("%d requests on keep-alive connections lost at the stop: %v", len(lost), lost)
	}
	if closes.Load() == 0 || c.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("no answer said Connection: close during the stop; exit %d", c.cmd.ProcessState.ExitCode())
	}
}

// postKeyed posts a job under an Idempotency-Key on a new connection.
func postKeyed(t *testing.T, c *crewd, key, body string) rawAnswer {
	t.Helper()
	return raw(t, c.http, postJSON("/v1/jobs", body, "Idempotency-Key: \""+key+"\""))
}

// TestIdempotentRetry: a client whose connection is cut as it posts a job
// (right after the request is written, reset, or at the first byte of the
// answer) retries with the same Idempotency-Key on either of two replicas
// sharing one NATS, and is answered the same job every time; every key
// makes one job, run once. Another request under a key is 422.
func TestIdempotentRetry(t *testing.T) {
	a := start(t, "-nats-listen", "127.0.0.1:0", "-shutdown-delay", "0s")
	b := start(t, "-nats-url", a.nats, "-shutdown-delay", "0s")
	replicas := []*crewd{a, b}
	const body = `{"kind":"sleep","duration":"20ms"}`
	cuts := map[string]func(conn *net.TCPConn){
		"after the request": func(conn *net.TCPConn) {},
		"reset": func(conn *net.TCPConn) {
			_ = conn.SetLinger(0) // the close sends RST
		},
		"at the answer": func(conn *net.TCPConn) {
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			var b [1]byte
			_, _ = conn.Read(b[:])
		},
	}
	ids := map[string]string{} // key: job id
	n := 0
	for name, cut := range cuts {
		for i := range 5 {
			n++
			key := fmt.Sprintf("retry-%d-%d", n, time.Now().UnixNano())
			c := replicas[i%2]
			conn, err := net.Dial("tcp", addrOf(c.http))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(conn, postJSON("/v1/jobs", body, "Idempotency-Key: \""+key+"\"")); err != nil {
				t.Fatal(err)
			}
			cut(conn.(*net.TCPConn))
			conn.Close()
			// The retries, on both replicas.
			for j := range 3 {
				ans := postKeyed(t, replicas[(i+j+1)%2], key, body)
				id, _ := ans.body["id"].(string)
				if ans.code != 202 || id == "" {
					t.Fatalf("cut %s: retry %d: %d %s", name, j, ans.code, ans.raw)
				}
				if ids[key] == "" {
					ids[key] = id
				} else if ids[key] != id {
					t.Fatalf("cut %s: retry %d answered job %s, an earlier one %s", name, j, id, ids[key])
				}
			}
		}
	}
	if ans := postKeyed(t, b, fmt.Sprintf("retry-%d", 1), body); ans.code != 202 {
		t.Fatalf("a fresh key: %d %s", ans.code, ans.raw)
	}
	var someKey string
	for someKey = range ids {
	}
	if ans := postKeyed(t, a, someKey, `{"kind":"sleep","duration":"21ms"}`); ans.code != 422 || !strings.Contains(ans.raw, "idempotency key reused for another request") {
		t.Fatalf("another request under a key: %d %s", ans.code, ans.raw)
	}
	i := 0
	for _, id := range ids {
		i++
		waitJob(t, replicas[i%2], id, "succeeded", 20*time.Second)
	}
	// Every job ran once: the runs of both replicas add up to the keys.
	ran := 0
	for _, c := range []*crewd{b, a} {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		<-c.exited
		end := c.logLine("crewd stopped")
		if end == nil {
			t.Fatal("no summary line")
		}
		ran += int(end["jobs_succeeded"].(float64))
		if end["jobs_skipped"] != float64(0) {
			t.Fatalf("a job delivered twice: %v", end)
		}
	}
	if ran != len(ids)+1 {
		t.Fatalf("%d runs for %d keys", ran, len(ids)+1)
	}
	t.Logf("%d keys posted with a cut connection and retried 3 times each over two replicas: %d jobs, each run once", len(ids), len(ids))
}

// TestIdempotentRetryInMemory: the same promise without NATS, for as long
// as the job's record is kept.
func TestIdempotentRetryInMemory(t *testing.T) {
	c := start(t, "-nats-url", "off")
	const body = `{"kind":"factorial","n":7}`
	conn, err := net.Dial("tcp", addrOf(c.http))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, postJSON("/v1/jobs", body, `Idempotency-Key: "mem-1"`)); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).SetLinger(0)
	conn.Close() // reset, as the answer may be on its way
	first := postKeyed(t, c, "mem-1", body)
	again := postKeyed(t, c, "mem-1", body)
	if first.code != 202 || again.code != 202 || first.body["id"] != again.body["id"] {
		t.Fatalf("retries: %d %s, %d %s", first.code, first.raw, again.code, again.raw)
	}
	if ans := postKeyed(t, c, "mem-1", `{"kind":"factorial","n":8}`); ans.code != 422 {
		t.Fatalf("another request under the key: %d %s", ans.code, ans.raw)
	}
	waitJob(t, c, first.body["id"].(string), "succeeded", 10*time.Second)
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.exited
	if end := c.logLine("crewd stopped"); end == nil || end["jobs_succeeded"] != float64(1) {
		t.Fatalf("one key, one job: %v", end)
	}
}

// TestFreshConnectionsAtTheStop: clients that open a new connection for
// every request, through a stop. Once the listener is closed a connect
// fails; a connection that connected is answered, 200, or 503 with
// Connection: close, never met with EOF. A reset is what the kernel does
// to a handshake it completes in the instant the listener closes (see
// gate): at most resetsAllowed in a stop of 32 clients. And a connection
// opened during the shutdown delay that sends its request just after the
// listener closed is answered.
func TestFreshConnectionsAtTheStop(t *testing.T) {
	c := start(t, "-nats-url", "off", "-workers", "2", "-shutdown-delay", "300ms", "-shutdown-timeout", "10s")
	var (
		wg                         sync.WaitGroup
		answered, refusedN, resets atomic.Int64
		mu                         sync.Mutex
		lost                       []string
	)
	fail := func(s string) {
		mu.Lock()
		lost = append(lost, s)
		mu.Unlock()
	}
	check := func(what string, ans rawAnswer, err error) {
		switch {
		case err != nil:
			fail(what + ": connected, then " + err.Error())
		case ans.code == 200 || ans.code == 503 && ans.close:
			answered.Add(1)
		default:
			fail(fmt.Sprintf("%s: answer %d (Connection: close %v) %s", what, ans.code, ans.close, ans.raw))
		}
	}
	req := postJSON("/v1/factorial", `{"numbers":[5,6,7]}`)
	for range 32 {
		wg.Go(func() {
			for {
				conn, err := net.DialTimeout("tcp", addrOf(c.http), 10*time.Second)
				if err != nil {
					refusedN.Add(1)
					return // the listener has closed
				}
				ans, err := roundTrip(conn, bufio.NewReader(conn), req)
				conn.Close()
				if errors.Is(err, syscall.ECONNRESET) {
					resets.Add(1)
					return
				}
				check("a new connection", ans, err)
				if err != nil {
					return
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // load before the stop; not a synchronisation
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Connected during the delay, silent until the listener has closed.
	late, err := net.Dial("tcp", addrOf(c.http))
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	for c.logLine("shutdown: closing the API listener, stopping the job source and the pool") == nil {
		select {
		case <-c.exited:
			t.Fatal("crewd exited before its listener closed")
		case <-time.After(5 * time.Millisecond):
		}
	}
	time.Sleep(100 * time.Millisecond)
	ans, err := roundTrip(late, bufio.NewReader(late), req)
	check("a request sent 100ms after the listener closed", ans, err)
	wg.Wait()
	<-c.exited
	t.Logf("%d answers, %d clients refused at connect, %d reset", answered.Load(), refusedN.Load(), resets.Load())
	if resets.Load() > resetsAllowed {
		fail(fmt.Sprintf("%d connections reset, at most %d expected", resets.Load(), resetsAllowed))
	}
	if len(lost) > 0 {
		t.Fatalf("%d requests on connections that connected were not answered: %v", len(lost), lost)
	}
	if c.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("exit %d", c.cmd.ProcessState.ExitCode())
	}
}

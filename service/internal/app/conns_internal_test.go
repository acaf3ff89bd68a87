package app

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestGateServesWhatItAccepted: at the close, a connection accepted
// before it whose request comes after the listener closed is answered, the
// close waits for a silent one until the grace, and closes it then. The
// grace is a channel: the test fires it.
func TestGateServesWhatItAccepted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
	})}
	g := newGate(srv, ln)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(g.listener()) }()

	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	late, silent := dial(), dial()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		n := len(g.waiting)
		g.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections accepted, want 2", n)
		}
	}

	grace := make(chan time.Time)
	closed := make(chan struct{})
	go func() {
		g.close(context.Background(), grace)
		close(closed)
	}()
	<-g.shut // the listener is closed
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("a connection after the close was accepted")
	}
	if _, err := io.WriteString(late, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(late), nil)
	if err != nil {
		t.Fatalf("a request sent after the listener closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a request sent after the listener closed: %d", resp.StatusCode)
	}
	select {
	case <-closed:
		t.Fatal("the close returned with a silent connection open, before its grace")
	case <-time.After(50 * time.Millisecond): // a bound for the check, not a wait for the code
	}
	close(grace)
	<-closed
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the silent connection after the grace: %v, want EOF", err)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err == nil {
		t.Fatal("Serve returned nil")
	}
}

// TestGateWaitsForAnIdleKeepAlive: a keep-alive connection idle when the
// listener closes (its last answer came before the stop, and its client
// was slow to send the next) may still deliver a request within the
// grace, and has it answered, not reset by the server's Shutdown closing
// idle connections. A fresh clone's test.sh met it: crewd's stop test, its
// client starved for longer than the shutdown delay, had 8 requests reset.
func TestGateWaitsForAnIdleKeepAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var stopping atomic.Bool
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stopping.Load() {
			w.Header().Set("Connection", "close")
		}
	})}
	g := newGate(srv, ln)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(g.listener()) }()
	// keepAlive is a connection that has had one request answered and
	// stays open, and get sends it another.
	type keepAlive struct {
		c net.Conn
		r *bufio.Reader
	}
	get := func(k keepAlive) (*http.Response, error) {
		if _, err := io.WriteString(k.c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return nil, err
		}
		resp, err := http.ReadResponse(k.r, nil)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	var late, silent keepAlive
	for _, k := range []*keepAlive{&late, &silent} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		*k = keepAlive{c, bufio.NewReader(c)}
		if resp, err := get(*k); err != nil || resp.StatusCode != 200 || resp.Close {
			t.Fatalf("the first request: %v %v", resp, err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		n := len(g.idle)
		g.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d keep-alive connections seen idle, want 2", n)
		}
	}

	stopping.Store(true)
	grace := make(chan time.Time)
	stopped := make(chan struct{})
	go func() {
		g.close(context.Background(), grace)
		_ = srv.Shutdown(context.Background()) // as the stop does: it closes idle connections
		close(stopped)
	}()
	<-g.shut
	time.Sleep(50 * time.Millisecond) // the slow client: not a wait for the code, which must not close meanwhile
	resp, err := get(late)
	if err != nil || resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("a request on a keep-alive connection idle at the close: %v %v, want 200 with Connection: close", resp, err)
	}
	// Liveness: the silent one holds the stop until the grace, no longer.
	select {
	case <-stopped:
		t.Fatal("the stop went on with a silent idle connection open, before its grace")
	case <-time.After(50 * time.Millisecond): // a bound for the check, not a wait for the code
	}
	close(grace)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second): // a bound for liveness
		t.Fatal("the stop still waits for the silent idle connection 10 s after its grace")
	}
	_ = silent.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.r.ReadByte(); err != io.EOF {
		t.Fatalf("the silent idle connection after the grace: %v, want EOF", err)
	}
	if err := <-served; err == nil {
		t.Fatal("Serve returned nil")
	}
}

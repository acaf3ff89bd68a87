package app

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// silentGrace is how long, once the listener is closed, a connection
// accepted before may take to deliver its first request: long enough for a
// request already on its way to arrive and be served.
const silentGrace = time.Second

// gate closes the API listener at the stop without leaving a connection it
// accepted unanswered. net/http's Server.Shutdown drops, unanswered, a
// request it reads after Shutdown has begun; so the gate closes the
// listener itself and keeps the server serving until every connection
// accepted has had a request reach the handler (answered then, with
// Connection: close), has closed, or has stayed silent silentGrace, when
// it is closed. Only then may Shutdown begin: it then finds no connection
// with a request still to read.
//
// A close resets the connections the kernel has completed and queued but
// the server not yet accepted. So the gate first takes the server's Accept
// out of the listener, then accepts every queued connection itself and
// closes the listener at once (takeQueued), and hands those connections to
// the server. What remains is a handshake completed in the instant between
// the last of those accepts and the close, and one completing as the
// listener closes: the kernel resets those.
//
// A keep-alive connection idle at the close (its last answer came before
// the stop began, its client slow to send the next request) is waited for
// like a new one: Shutdown would close it, and reset a request arriving
// on it meanwhile.
type gate struct {
	ln                net.Listener
	closing           atomic.Bool
	parked            chan struct{} // closed when the server's Accept has left the listener
	shut              chan struct{} // closed when the listener is closed and queued set
	ended             chan struct{} // closed when the server's Accept has had every queued connection
	parkOnce, endOnce sync.Once

	mu      sync.Mutex
	queued  []net.Conn                  // taken from the kernel's queue at the close, for the server
	waiting map[net.Conn]http.ConnState // accepted, no request handled yet; at the close, the idle too
	idle    map[net.Conn]struct{}       // keep-alive connections between requests
	settled chan struct{}               // closed once waiting is empty, after the listener closed
}

type connKey struct{}

// closedTime is a grace that has fired.
var closedTime = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// newGate puts a gate on srv, which is to serve g.listener(): it sets
// srv's ConnState and ConnContext and wraps its Handler.
func newGate(srv *http.Server, ln net.Listener) *gate {
	g := &gate{ln: ln, parked: make(chan struct{}), shut: make(chan struct{}), ended: make(chan struct{}),
		waiting: map[net.Conn]http.ConnState{}, idle: map[net.Conn]struct{}{}}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		g.mu.Lock()
		defer g.mu.Unlock()
		switch st {
		case http.StateNew:
			g.waiting[c] = st
		case http.StateActive:
			delete(g.idle, c)
			if _, ok := g.waiting[c]; ok {
				g.waiting[c] = st
			}
		case http.StateIdle:
			g.idle[c] = struct{}{}
		case http.StateClosed, http.StateHijacked:
			delete(g.idle, c)
			g.doneLocked(c)
		}
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			g.done(c)
		}
		h.ServeHTTP(w, r)
	})
	return g
}

// listener is the listener the server is to serve.
func (g *gate) listener() net.Listener { return gateListener{g.ln, g} }

type gateListener struct {
	net.Listener
	g *gate
}

// Accept is the server's. Once the gate is closing, it waits, off the
// listener, for the close; then it hands out the connections the gate took
// from the queue, and then fails, the server having registered (StateNew)
// every connection it accepted.
func (l gateListener) Accept() (net.Conn, error) {
	g := l.g
	if !g.closing.Load() {
		c, err := l.Listener.Accept()
		if err == nil || !g.closing.Load() {
			return c, err
		}
	}
	g.parkOnce.Do(func() { close(g.parked) })
	<-g.shut
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queued) > 0 {
		c := g.queued[0]
		g.queued = g.queued[1:]
		return c, nil
	}
	g.endOnce.Do(func() { close(g.ended) })
	return nil, net.ErrClosed
}

// done records that c needs nothing more from the gate: a request of its
// reached the handler, or it closed.
func (g *gate) done(c net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.doneLocked(c)
}

func (g *gate) doneLocked(c net.Conn) {
	if _, ok := g.waiting[c]; !ok {
		return
	}
	delete(g.waiting, c)
	if g.settled != nil && len(g.waiting) == 0 {
		close(g.settled)
		g.settled = nil
	}
}

// close closes the listener and returns once every connection accepted
// has had a request reach the handler or has closed; those still silent
// when grace fires (the caller starts it as close is called) are closed
// then. It returns early when ctx is done.
func (g *gate) close(ctx context.Context, grace <-chan time.Time) {
	g.closing.Store(true)
	if d, ok := g.ln.(interface{ SetDeadline(time.Time) error }); ok {
		_ = d.SetDeadline(time.Now()) // wakes the server's Accept
	}
	// A server whose Serve has already returned accepts no more: grace
	// bounds the waits for it.
	select {
	case <-g.parked:
	case <-grace:
		grace = closedTime
	case <-ctx.Done():
	}
	queued := takeQueued(g.ln)
	_ = g.ln.Close()
	g.mu.Lock()
	g.queued = queued
	g.mu.Unlock()
	close(g.shut)
	select {
	case <-g.ended:
	case <-grace:
		grace = closedTime
	case <-ctx.Done():
		return
	}
	settled := make(chan struct{})
	g.mu.Lock()
	for c := range g.idle {
		g.waiting[c] = http.StateIdle
	}
	if len(g.waiting) == 0 {
		close(settled)
	} else {
		g.settled = settled
	}
	g.mu.Unlock()
	select {
	case <-settled:
		return
	case <-ctx.Done():
		return
	case <-grace:
	}
	// A connection whose request has been read (StateActive) is about to
	// reach the handler: only the silent ones are closed.
	g.mu.Lock()
	for c, st := range g.waiting {
		if st == http.StateNew || st == http.StateIdle {
			_ = c.Close()
		}
	}
	g.mu.Unlock()
	select {
	case <-settled:
	case <-ctx.Done():
	}
}

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
// What the gate cannot save is a connection the kernel completed but the
// server had not accepted when the listener closed: the kernel resets it.
type gate struct {
	ln      net.Listener
	closing atomic.Bool
	ended   chan struct{} // closed when the server's Accept fails after the close
	endOnce sync.Once

	mu      sync.Mutex
	waiting map[net.Conn]http.ConnState // accepted, no request handled yet
	settled chan struct{}               // closed once waiting is empty, after the listener closed
}

type connKey struct{}

// closedTime is a grace that has fired.
var closedTime = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// newGate puts a gate on srv, which is to serve ln: it sets srv's
// ConnState and ConnContext and wraps its Handler.
func newGate(srv *http.Server, ln net.Listener) *gate {
	g := &gate{ln: ln, ended: make(chan struct{}), waiting: map[net.Conn]http.ConnState{}}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			g.mu.Lock()
			g.waiting[c] = st
			g.mu.Unlock()
		case http.StateActive:
			g.mu.Lock()
			if _, ok := g.waiting[c]; ok {
				g.waiting[c] = st
			}
			g.mu.Unlock()
		case http.StateClosed, http.StateHijacked:
			g.done(c)
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

// listener is the listener the server is to serve: an Accept that fails
// once the gate closed it tells that the server has registered (StateNew)
// every connection it accepted.
func (g *gate) listener() net.Listener { return gateListener{g.ln, g} }

type gateListener struct {
	net.Listener
	g *gate
}

func (l gateListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && l.g.closing.Load() {
		l.g.endOnce.Do(func() { close(l.g.ended) })
	}
	return c, err
}

// done records that c needs nothing more from the gate: a request of its
// reached the handler, or it closed.
func (g *gate) done(c net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
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
	_ = g.ln.Close()
	// A server whose Serve has already returned accepts no more: grace
	// bounds the wait for it.
	select {
	case <-g.ended:
	case <-grace:
		grace = closedTime
	case <-ctx.Done():
		return
	}
	settled := make(chan struct{})
	g.mu.Lock()
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
		if st == http.StateNew {
			_ = c.Close()
		}
	}
	g.mu.Unlock()
	select {
	case <-settled:
	case <-ctx.Done():
	}
}

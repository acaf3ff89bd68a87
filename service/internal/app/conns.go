package app

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// silentGrace is how long a connection accepted before the stop may stay
// silent once the listener is closed: long enough for a request already on
// its way to be read and served.
const silentGrace = time.Second

// closeSilentAtStop makes srv's Shutdown close the connections that have
// still not sent a byte silentGrace after the listener closed, rather than
// after the 5 s that http.Server gives them: a client that connects and
// sends nothing does not hold a stop. For such a client the connection is
// as refused: nothing of it was read.
func closeSilentAtStop(srv *http.Server) {
	var (
		mu     sync.Mutex
		silent = map[net.Conn]struct{}{}
	)
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		if st == http.StateNew {
			silent[c] = struct{}{}
		} else {
			delete(silent, c)
		}
	}
	srv.RegisterOnShutdown(func() {
		time.AfterFunc(silentGrace, func() {
			mu.Lock()
			defer mu.Unlock()
			for c := range silent {
				_ = c.Close()
				delete(silent, c)
			}
		})
	})
}

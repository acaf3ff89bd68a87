package app

import (
	"net"
	"net/http"
	"sync"
)

// closeSilentAtStop makes srv's Shutdown close at once the connections
// that have not sent a byte yet, rather than after the 5 s that
// http.Server gives them: a client that connects and sends nothing does
// not hold a stop. Its listener is closed by then, so no new one comes;
// for such a client the connection is as refused (nothing was read).
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
		mu.Lock()
		defer mu.Unlock()
		for c := range silent {
			_ = c.Close()
			delete(silent, c)
		}
	})
}

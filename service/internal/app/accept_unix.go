//go:build unix

package app

import (
	"net"
	"os"
	"syscall"
)

// takeQueued accepts, without waiting, every connection in ln's accept
// queue, so that the close that follows at once resets none of them. No
// Accept of the server may be waiting on ln: its close would wait for that
// goroutine, and the kernel would queue, and the close reset, meanwhile.
func takeQueued(ln net.Listener) []net.Conn {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return nil
	}
	var conns []net.Conn
	_ = rc.Control(func(fd uintptr) {
		for {
			// The listener is non-blocking (Go's poller): EAGAIN when the
			// queue is empty.
			// Close-on-exec before a fork can copy it, as net does.
			syscall.ForkLock.RLock()
			nfd, _, err := syscall.Accept(int(fd))
			if err == nil {
				syscall.CloseOnExec(nfd)
			}
			syscall.ForkLock.RUnlock()
			if err == syscall.EINTR || err == syscall.ECONNABORTED {
				continue
			}
			if err != nil {
				return
			}
			f := os.NewFile(uintptr(nfd), "")
			c, err := net.FileConn(f) // a copy of the descriptor, non-blocking
			_ = f.Close()
			if err == nil {
				conns = append(conns, c)
			}
		}
	})
	return conns
}

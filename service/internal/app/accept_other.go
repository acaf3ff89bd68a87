//go:build !unix

package app

import "net"

// takeQueued takes nothing here: a connection still in the accept queue
// when the listener closes is reset.
func takeQueued(net.Listener) []net.Conn { return nil }

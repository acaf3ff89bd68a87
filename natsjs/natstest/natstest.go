// Package natstest starts NATS JetStream servers in-process, on loopback,
// for the tests and benchmarks of crew's modules (natsjs, natsprom, crewd)
// and of programs that use natsjs: one way to make the server every test
// needs, written once.
package natstest

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ReadyTimeout bounds how long a server may take to accept connections.
const ReadyTimeout = 10 * time.Second

// Options are one JetStream server's on 127.0.0.1: its store in dir, on
// port (-1: any free one), without logs or signal handlers. Change them
// (a cluster, a server name) before Run or Start.
func Options(dir string, port int) *server.Options {
	return &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true}
}

// Run starts a server with opts and waits until it accepts connections;
// the caller shuts it down (Shutdown, then WaitForShutdown).
func Run(opts *server.Options) (*server.Server, error) {
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	if !opts.NoLog {
		srv.ConfigureLogger()
	}
	srv.Start()
	if !srv.ReadyForConnections(ReadyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, errors.New("natstest: nats-server not ready in " + ReadyTimeout.String())
	}
	return srv, nil
}

// Start is Run for a test: a failure fails tb, and the server is shut
// down, and waited for, when tb ends (a test may shut it down before).
func Start(tb testing.TB, opts *server.Options) *server.Server {
	tb.Helper()
	srv, err := Run(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv
}

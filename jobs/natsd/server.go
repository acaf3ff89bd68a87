package natsd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Server is a running embedded NATS server with JetStream.
type Server struct {
	ns   *server.Server
	lock *os.File
	log  *logger
	once sync.Once
}

// ErrLocked is returned by Start when another process holds the data
// directory.
var ErrLocked = errors.New("data directory in use by another process")

// startTimeout bounds how long Start waits for the server to be ready; a
// store of many messages takes a while to recover after a crash.
const startTimeout = time.Minute

// Start runs a server whose JetStream file store is in dir (created if
// missing). listen is "" for no TCP listener, or host:port (port 0 picks a
// free one) to serve NATS clients there too. The server's own log lines go
// to log: its notices at debug level, its warnings and errors as such.
func Start(dir, listen string, log *slog.Logger) (*Server, error) {
	opts := &server.Options{
		ServerName: "crewd",
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true, // crewd owns the signals
		DontListen: listen == "",
		MaxPayload: 1 << 20,
	}
	if listen != "" {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, fmt.Errorf("listen address %q: %v", listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("listen address %q: bad port", listen)
		}
		if p == 0 {
			p = server.RANDOM_PORT
		}
		opts.Host, opts.Port = host, p
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		lock.Close()
		return nil, err
	}
	l := &logger{log: log}
	ns.SetLoggerV2(l, false, false, false)
	ns.Start()
	if !ns.ReadyForConnections(startTimeout) || !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		lock.Close()
		if err := l.fatal(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("embedded NATS server not ready within %v", startTimeout)
	}
	return &Server{ns: ns, lock: lock, log: l}, nil
}

// lockDir creates dir, checks that it can be written and takes its lock.
func lockDir(dir string) (*os.File, error) {
	if dir == "" {
		return nil, errors.New("no data directory")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "crewd.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w (%s): %v", ErrLocked, dir, err)
	}
	return f, nil
}

// Connect opens an in-process connection to the server: no TCP, no port.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	return nats.Connect("", append([]nats.Option{nats.InProcessServer(s.ns)}, opts...)...)
}

// ClientURL is the URL NATS clients dial, "" without a listener.
func (s *Server) ClientURL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// Shutdown stops the server, waits until it has, and releases the data
// directory. Safe to call more than once.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		s.lock.Close()
	})
}

// logger passes the server's log lines to slog, and keeps the last fatal
// one for Start's error.
type logger struct {
	log *slog.Logger
	mu  sync.Mutex
	err error
}

func (l *logger) fatal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *logger) emit(level slog.Level, format string, v []any) {
	if l.log != nil {
		l.log.Log(context.Background(), level, fmt.Sprintf(format, v...), "component", "nats-server")
	}
}

func (l *logger) Noticef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }
func (l *logger) Warnf(format string, v ...any)   { l.emit(slog.LevelWarn, format, v) }
func (l *logger) Errorf(format string, v ...any)  { l.emit(slog.LevelError, format, v) }
func (l *logger) Debugf(format string, v ...any)  {}
func (l *logger) Tracef(format string, v ...any)  {}

// Fatalf is an error that stops the server; it never exits the process.
func (l *logger) Fatalf(format string, v ...any) {
	l.emit(slog.LevelError, format, v)
	l.mu.Lock()
	l.err = fmt.Errorf(format, v...)
	l.mu.Unlock()
}

package durable_test

import (
	"bytes"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/crew-go/crew/service/internal/durable"
	"github.com/crew-go/crew/service/internal/kinds"
)

// TestStartWaitsForTheServer: crewd's pods start together with the NATS
// servers of the same install, whose Service has no endpoint until one is
// Ready, so the first connection is refused. Start keeps trying within the
// setup's time and succeeds once a server listens, rather than failing at
// once (which cost every crewd pod of a fresh install three or four
// restarts on a real node).
func TestStartWaitsForTheServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	pool, err := crew.New(crew.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	cfg := jsjobs.Config{Kinds: kinds.New(), AckWait: 5 * time.Second, Log: logger}
	opts := natstest.Options(t.TempDir(), port)
	started := make(chan error, 1)
	go func() {
		time.Sleep(2 * time.Second)
		srv, err := natstest.Run(opts)
		if err == nil {
			t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		}
		started <- err
	}()
	t0 := time.Now()
	d, err := durable.Start(durable.Settings{URL: "nats://127.0.0.1:" + strconv.Itoa(port), Config: cfg}, logger, pool)
	if serr := <-started; serr != nil {
		t.Fatal(serr)
	}
	if err != nil {
		t.Fatalf("Start with the server up 2 s later: %v\n%s", err, log.String())
	}
	defer d.Close(logger)
	if took := time.Since(t0); took < 2*time.Second {
		t.Errorf("Start returned after %v, before the server started", took)
	}
}

// syncBuffer is a log written by the server's goroutines and read by the
// test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

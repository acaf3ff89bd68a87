package jsstore_test

import (
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/crew-go/crew/service/internal/jobs/jsstore"
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
	cfg := jsConfig()
	cfg.Log = logger
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
	d, err := jsstore.Start(jsstore.Settings{URL: "nats://127.0.0.1:" + strconv.Itoa(port), Config: cfg}, logger, pool)
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

package natstest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/nats-io/nats.go"
)

// TestStart: the server takes a connection with JetStream on, and keeps
// its store in the directory given.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	srv := natstest.Start(t, natstest.Options(dir, -1))
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.JetStream(); err != nil {
		t.Fatal(err)
	}
	if !srv.JetStreamEnabled() {
		t.Fatal("JetStream off")
	}
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Fatalf("no store in %s: %v", dir, err)
	}
}

// TestRunRefuses: options the server refuses are an error, not a hang.
func TestRunRefuses(t *testing.T) {
	opts := natstest.Options(t.TempDir(), -1)
	opts.Cluster.Port = -1
	opts.Cluster.Name = "a b"
	if srv, err := natstest.Run(opts); err == nil {
		srv.Shutdown()
		t.Fatal("a cluster name with a space was accepted")
	}
}

package natsd_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs/natsd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func start(t *testing.T, dir, listen string) *natsd.Server {
	t.Helper()
	s, err := natsd.Start(dir, listen, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t *testing.T, s *natsd.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// TestStoreOutlivesTheServer: a message stored before a stop is there
// after a restart on the same directory, and nothing listens on TCP unless
// asked to.
func TestStoreOutlivesTheServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	s := start(t, dir, "")
	if s.ClientURL() != "" {
		t.Fatalf("a server without a listen address listens on %s", s.ClientURL())
	}
	nc, js := connect(t, s)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "t", Subjects: []string{"t.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.1", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	s.Shutdown()
	s.Shutdown() // twice is fine

	s = start(t, dir, "")
	_, js = connect(t, s)
	st, err := js.Stream(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, "t.1")
	if err != nil || string(m.Data) != "kept" {
		t.Fatalf("after a restart: %v %+v", err, m)
	}
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Fatalf("the store is not in the data directory: %v", err)
	}
}

// TestListen: with a listen address, clients dial the server over TCP.
func TestListen(t *testing.T) {
	s := start(t, t.TempDir(), "127.0.0.1:0")
	url := s.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("ClientURL = %q", url)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestBadStarts: a directory in use, one that cannot be made and a bad
// listen address are refused with an error that says so, and leave the
// directory free.
func TestBadStarts(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir, "")
	if _, err := natsd.Start(dir, "", nil); !errors.Is(err, natsd.ErrLocked) {
		t.Fatalf("a second server on the same directory: %v, want ErrLocked", err)
	}
	s.Shutdown()
	start(t, dir, "").Shutdown() // free again

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, listen, want string }{
		{filepath.Join(file, "sub"), "", "not a directory"},
		{"", "", "no data directory"},
		{t.TempDir(), "localhost", "missing port"},
		{t.TempDir(), "127.0.0.1:99999", "bad port"},
	} {
		if s, err := natsd.Start(tc.dir, tc.listen, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			if err == nil {
				s.Shutdown()
			}
			t.Errorf("Start(%q, %q) = %v, want an error saying %q", tc.dir, tc.listen, err, tc.want)
		}
	}
}

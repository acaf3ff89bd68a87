package e2e_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestJournalWithSharedNATS: a crewd on a shared NATS (-nats-url) with a
// -journal, SIGKILLed while it runs a job and started again on the same
// journal (a container restarted in its pod, the file on its emptyDir),
// runs that job again at once, not after the ack wait.
func TestJournalWithSharedNATS(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the NATS server did not start")
	}
	journal := filepath.Join(t.TempDir(), "held")
	args := []string{"-nats-url", srv.ClientURL(), "-journal", journal, "-nats-ack-wait", "20s", "-shutdown-delay", "0s"}
	b := start(t, args...)
	o := post(b.http+"/v1/jobs", `{"kind":"sleep","duration":"3s"}`)
	if o.code != 202 {
		t.Fatalf("a job: %+v", o)
	}
	waitJob(t, b, o.jobID, "running", 10*time.Second)
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-b.exited
	killed := time.Now()
	b = start(t, args...)
	waitJob(t, b, o.jobID, "succeeded", 15*time.Second)
	if d := time.Since(killed); d > 12*time.Second {
		t.Fatalf("the job ran again %v after the kill: want well within the 20 s ack wait", d)
	}
	t.Logf("the killed crewd's job succeeded %v after the kill (ack wait 20 s)", time.Since(killed).Round(100*time.Millisecond))
}

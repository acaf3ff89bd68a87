package jsjobs_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A cluster of three nats-server processes, built from the module this
// one requires: a process can be frozen (SIGSTOP) as a server cut off the
// network is, without the leaderships a shutdown hands over first.

var (
	natsServerOnce sync.Once
	natsServerBin  string
	natsServerErr  error
)

// natsServer builds the nats-server binary once for the test binary.
func natsServer(t *testing.T) string {
	t.Helper()
	natsServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nats-server-bin")
		if err != nil {
			natsServerErr = err
			return
		}
		natsServerBin = filepath.Join(dir, "nats-server")
		out, err := exec.Command("go", "build", "-o", natsServerBin, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			natsServerErr = fmt.Errorf("go build nats-server: %v\n%s", err, out)
		}
	})
	if natsServerErr != nil {
		t.Fatal(natsServerErr)
	}
	return natsServerBin
}

type processCluster struct {
	urls  []string
	procs []*exec.Cmd
}

// startProcessCluster starts servers n1, n2 and n3 in a cluster, each
// with JetStream, and waits until each accepts clients.
func startProcessCluster(t *testing.T) *processCluster {
	t.Helper()
	bin := natsServer(t)
	var ports []int
	for range 6 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	var routes []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]))
	}
	c := &processCluster{}
	for i := range 3 {
		dir := t.TempDir()
		conf := fmt.Sprintf("server_name: n%d\nlisten: 127.0.0.1:%d\njetstream { store_dir: %q }\ncluster { name: test, listen: 127.0.0.1:%d, routes: [%s] }\n",
			i+1, ports[i], dir, ports[3+i], strings.Join(routes, ", "))
		file := filepath.Join(dir, "nats.conf")
		if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-c", file)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c.procs = append(c.procs, cmd)
		c.urls = append(c.urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	for i := range 3 {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[i])); err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("n%d does not accept clients after 20 s", i+1)
			}
		}
	}
	return c
}

// freeze stops server i as a cut would: no handover, no answer.
func (c *processCluster) freeze(t *testing.T, i int) {
	t.Helper()
	if err := c.procs[i].Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// thaw lets server i go on.
func (c *processCluster) thaw(t *testing.T, i int) {
	t.Helper()
	if err := c.procs[i].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

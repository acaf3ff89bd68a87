package app

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

// TestInUseNamesTheProcessHoldingThePort: a port this process listens
// on, over IPv4 and over a dual-stack socket (net/tcp6), is found held by
// this process, its command line read; the message for another process
// then says to kill that pid, never pkill. Before, it advised "pkill
// crewd", which stops every crewd of every user.
func TestInUseNamesTheProcessHoldingThePort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	for _, addr := range []string{"127.0.0.1:0", ":0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		_, err = net.Listen("tcp", ln.Addr().String())
		if !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("listen again on %s: %v, want EADDRINUSE", ln.Addr(), err)
		}
		hs, uids := portHolders(os.DirFS("/proc"), portOf(ln.Addr().String()))
		if len(hs) != 1 || hs[0].pid != os.Getpid() || !strings.Contains(hs[0].cmd, filepath.Base(os.Args[0])) || len(uids) != 0 {
			t.Fatalf("%s: holders %+v, uids %v; want this process, %d %s", ln.Addr(), hs, uids, os.Getpid(), os.Args[0])
		}
		msg := inUseHint(port, hs, uids, 1) // as another process reads it
		if !strings.Contains(msg, fmt.Sprintf(`kill %d"`, os.Getpid())) || !strings.Contains(msg, filepath.Base(os.Args[0])) || strings.Contains(msg, "pkill") {
			t.Errorf("%s: %q, want this process named and killed alone", ln.Addr(), msg)
		}
		if msg := inUse(err, ln.Addr().String()); !strings.Contains(msg, fmt.Sprintf("this process, %d, holds it already", os.Getpid())) {
			t.Errorf("%s held by this very process: %q", ln.Addr(), msg)
		}
	}
}

// TestInUseHint: a crewd holding the port is named as one, another
// program as itself; sockets of another user are answered by that user;
// with nothing found the message says how to find the process, and
// never advises pkill.
func TestInUseHint(t *testing.T) {
	proc := fstest.MapFS{
		"net/tcp": {Data: []byte(
			"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
				"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0 100 0 0 10 0\n" +
				"   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 112 1 0 100 0 0 10 0\n" +
				"   2: 00000000:2382 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 113 1 0 100 0 0 10 0\n")},
		"net/tcp6": {Data: []byte(
			"  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
				"   0: 00000000000000000000000000000000:2382 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 114 1 0 100 0 0 10 0\n" +
				"   1: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 115 1 0 100 0 0 10 0\n")},
		"42/cmdline": {Data: []byte("/tmp/go-build1/b001/exe/crewd\x00-http-addr\x00:8080\x00")},
		"42/fd/3":    {Data: []byte("socket:[111]"), Mode: fs.ModeSymlink},
		"42/fd/4":    {Data: []byte("socket:[112]"), Mode: fs.ModeSymlink},
		"43/cmdline": {Data: []byte("nginx: master process\x00")},
		"43/fd/7":    {Data: []byte("socket:[115]"), Mode: fs.ModeSymlink},
		"44/fd/1":    {Data: []byte("/dev/null"), Mode: fs.ModeSymlink},
	}
	for _, c := range []struct {
		port int
		says []string
	}{
		{8080, []string{`another crewd still running? Process 42 ("/tmp/go-build1/b001/exe/crewd -http-addr :8080") holds it; stop that one with "kill 42"`}},
		{8081, []string{`process 43 ("nginx: master process") holds it: stop it with "kill 43" if it may go`}},
		{9090, []string{`held by a process of `, `uid 0)`, `uid 1001`, `which this user cannot see`, `sport = :9090`, `"kill <pid>"`}},
		{9091, []string{`another crewd still running?`, `sport = :9091`, `-iTCP:9091`, `"kill <pid>"`}},
	} {
		hs, uids := portHolders(proc, c.port)
		msg := inUseHint(c.port, hs, uids, 44)
		for _, s := range c.says {
			if !strings.Contains(msg, s) {
				t.Errorf("port %d: %q, want %q", c.port, msg, s)
			}
		}
		if strings.Contains(msg, "pkill") {
			t.Errorf("port %d: %q advises pkill", c.port, msg)
		}
	}
	if msg := inUseHint(8080, []holder{{pid: 7, cmd: "crewd"}, {pid: 9}}, nil, 8); !strings.Contains(msg, `Processes 7 ("crewd"), 9 hold it; stop those with "kill 7 9"`) {
		t.Errorf("two holders: %q", msg)
	}
	if msg := inUseHint(8080, []holder{{pid: 7, cmd: "crewd"}}, nil, 7); !strings.Contains(msg, "this process, 7, holds it already: -http-addr and -admin-addr the same port?") {
		t.Errorf("held by this crewd: %q", msg)
	}
	if portOf(":http") != 80 || portOf("localhost:8080") != 8080 || portOf("nonsense") != 0 {
		t.Errorf("portOf: %d %d %d", portOf(":http"), portOf("localhost:8080"), portOf("nonsense"))
	}
}

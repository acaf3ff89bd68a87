package app

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// A port already in use is most often held by a crewd still running,
// orphaned when the go process of a "go run" was killed instead of crewd
// itself. The message names that one process, where Linux's /proc shows
// it, so that its user stops it and no other: a "pkill crewd" would stop
// every crewd of every user on the machine.

// inUse explains an address already in use (else ""): the process that
// holds addr's port, and how to stop that one.
func inUse(err error, addr string) string {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ""
	}
	port := portOf(addr)
	hs, uids := portHolders(os.DirFS("/proc"), port)
	return inUseHint(port, hs, uids, os.Getpid())
}

// holder is a process that has a listening socket open.
type holder struct {
	pid int
	cmd string // its command line, its arguments joined by spaces; "" if unread
}

// maxCmd bounds a command line in the message.
const maxCmd = 200

// inUseHint is inUse's text for port held by hs, or, where no process
// could be seen, by sockets of the users uids; self is this process.
func inUseHint(port int, hs []holder, uids []int, self int) string {
	p := strconv.Itoa(port)
	if port == 0 {
		p = "<port>"
	}
	if slices.ContainsFunc(hs, func(h holder) bool { return h.pid == self }) {
		return fmt.Sprintf(" (this process, %d, holds it already: -http-addr and -admin-addr the same port?)", self)
	}
	if len(hs) > 0 {
		names, pids := make([]string, len(hs)), make([]string, len(hs))
		crewd := false
		for i, h := range hs {
			pids[i] = strconv.Itoa(h.pid)
			names[i] = pids[i]
			if h.cmd != "" {
				names[i] += " (" + strconv.Quote(h.cmd) + ")"
			}
			arg0, _, _ := strings.Cut(h.cmd, " ")
			crewd = crewd || path.Base(arg0) == "crewd"
		}
		held, that, it, may := "process "+names[0]+" holds it", "that one", "it", "it"
		if len(hs) > 1 {
			held, that, it, may = "processes "+strings.Join(names, ", ")+" hold it", "those", "them", "they"
		}
		if crewd {
			return fmt.Sprintf(" (another crewd still running? P%s; stop %s with \"kill %s\"; killing the go process of \"go run\" leaves crewd running)", held[1:], that, strings.Join(pids, " "))
		}
		return fmt.Sprintf(" (%s: stop %s with \"kill %s\" if %s may go, or give another address)", held, it, strings.Join(pids, " "), may)
	}
	find := fmt.Sprintf("find it with \"ss -ltnp 'sport = :%s'\" or \"lsof -nP -iTCP:%s -sTCP:LISTEN\"", p, p)
	if len(uids) > 0 {
		owners := make([]string, len(uids))
		for i, uid := range uids {
			owners[i] = "uid " + strconv.Itoa(uid)
			if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
				owners[i] = u.Username + " (" + owners[i] + ")"
			}
		}
		return fmt.Sprintf(" (held by a process of %s, which this user cannot see: %s as root, and stop that one with \"kill <pid>\", or give another address)", strings.Join(owners, ", "), find)
	}
	return fmt.Sprintf(" (another crewd still running? Killing the go process of \"go run\" leaves crewd running: %s, and stop that one with \"kill <pid>\")", find)
}

// portOf is addr's port as a number, 0 if it has none.
func portOf(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, err := net.LookupPort("tcp", port)
	if err != nil {
		return 0
	}
	return n
}

// portHolders reads, best effort, the processes that listen on TCP port
// from proc (Linux's /proc): the inodes of the listening sockets in
// net/tcp and net/tcp6, then the processes whose fd/ links to one. The
// sockets no readable process holds (another user's, whose fd/ this
// process may not read) are answered by their owners' uids. Nothing is
// found off Linux, or for port 0.
func portHolders(proc fs.FS, port int) (hs []holder, uids []int) {
	if port <= 0 {
		return nil, nil
	}
	owners := map[string]int{} // socket inode: its owner's uid
	for _, table := range []string{"net/tcp", "net/tcp6"} {
		listening(proc, table, port, owners)
	}
	if len(owners) == 0 {
		return nil, nil
	}
	found := map[string]bool{}
	procs, _ := fs.ReadDir(proc, ".")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := fs.ReadDir(proc, p.Name()+"/fd")
		for _, fd := range fds {
			target, err := fs.ReadLink(proc, p.Name()+"/fd/"+fd.Name())
			inode, ok := strings.CutPrefix(target, "socket:[")
			inode = strings.TrimSuffix(inode, "]")
			if _, listens := owners[inode]; err != nil || !ok || !listens {
				continue
			}
			found[inode] = true
			if !slices.ContainsFunc(hs, func(h holder) bool { return h.pid == pid }) {
				hs = append(hs, holder{pid: pid, cmd: cmdline(proc, p.Name())})
			}
		}
	}
	for inode, uid := range owners {
		if !found[inode] && !slices.Contains(uids, uid) {
			uids = append(uids, uid)
		}
	}
	slices.SortFunc(hs, func(a, b holder) int { return a.pid - b.pid })
	slices.Sort(uids)
	return hs, uids
}

// listening adds to owners the inode and owner of each socket of table
// (net/tcp's format) listening on port.
func listening(proc fs.FS, table string, port int, owners map[string]int) {
	data, err := fs.ReadFile(proc, table)
	if err != nil {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		p, err := strconv.ParseUint(hexPort, 16, 16)
		uid, err2 := strconv.Atoi(f[7])
		if !ok || err != nil || err2 != nil || int(p) != port || f[9] == "0" {
			continue
		}
		owners[f[9]] = uid
	}
}

// cmdline is process pid's command line, its arguments joined by spaces
// and cut at maxCmd bytes; "" if unread.
func cmdline(proc fs.FS, pid string) string {
	data, err := fs.ReadFile(proc, pid+"/cmdline")
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(bytes.TrimRight(data, "\x00")), "\x00", " "))
	if len(s) > maxCmd {
		s = s[:maxCmd] + "..."
	}
	return s
}

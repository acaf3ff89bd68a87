package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// server is a store's server process, started by the benchmark on a
// loopback port with its data in a directory of its own.
type server struct {
	name string
	cmd  *exec.Cmd
	dir  string
	log  string
	sig  syscall.Signal // what stops it: SIGTERM, or PostgreSQL's fast shutdown SIGINT
	done chan error
}

func (s *server) stop() {
	if s == nil || s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(s.sig)
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.cmd.Process.Kill()
		<-s.done
	}
	os.RemoveAll(s.dir)
}

func startServer(name, dir, logPath string, sig syscall.Signal, cmd *exec.Cmd) (*server, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &server{name: name, cmd: cmd, dir: dir, log: logPath, sig: sig, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	return s, nil
}

// ready calls ping until it succeeds, the server exits, or 30 s pass.
func (s *server) ready(ctx context.Context, ping func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case werr := <-s.done:
			s.done <- werr
			return fmt.Errorf("%s exited (%v): %s", s.name, werr, tail(s.log))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v: %s", s.name, err, tail(s.log))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort is a loopback port free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startRedis starts Debian's redis-server on a loopback port, at its
// built-in defaults otherwise (RDB snapshots, no append-only file).
func startRedis(ctx context.Context, tmp string) (*server, string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", fmt.Errorf("redis-server not found (apt-get install redis-server): %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	dir := filepath.Join(tmp, "redis")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--daemonize", "no")
	dieWithParent(cmd, syscall.SIGKILL)
	s, err := startServer("redis-server", dir, filepath.Join(tmp, "redis.log"), syscall.SIGTERM, cmd)
	if err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	if err := s.ready(ctx, func(ctx context.Context) error { return rc.Ping(ctx).Err() }); err != nil {
		s.stop()
		return nil, "", err
	}
	return s, addr, nil
}

// postgresBin is the directory of Debian's newest PostgreSQL server.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "postgres")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("PostgreSQL not found in /usr/lib/postgresql/*/bin (apt-get install postgresql)")
}

// startPostgres starts Debian's PostgreSQL on a loopback port with a
// cluster made for the run (user bench, trust authentication), at its
// defaults otherwise (fsync on, synchronous_commit on). PostgreSQL refuses
// to run as root, so as root it runs as the postgres user the Debian
// package creates (else nobody), in a directory owned by that user.
func startPostgres(ctx context.Context, tmp string) (*server, string, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, "", err
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "jobsbench-pg-")
	if err != nil {
		return nil, "", err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		if err != nil {
			return nil, "", fmt.Errorf("postgres refuses root and there is no postgres or nobody user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, "", err
		}
	}
	as := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.Dir = dir
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return cmd
	}
	data := filepath.Join(dir, "data")
	initdb := as(exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "bench", "--auth=trust", "-E", "UTF8", "--no-sync"))
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("initdb: %v: %s", err, out)
	}
	cmd := as(exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-k", dir, "-c", "listen_addresses=127.0.0.1"))
	dieWithParent(cmd, syscall.SIGINT) // PostgreSQL's fast shutdown
	s, err := startServer("postgres", dir, filepath.Join(tmp, "postgres.log"), syscall.SIGINT, cmd)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	url := fmt.Sprintf("postgres://bench@127.0.0.1:%d/postgres?sslmode=disable", port)
	ping := func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		return c.Close(ctx)
	}
	if err := s.ready(ctx, ping); err != nil {
		s.stop()
		return nil, "", err
	}
	return s, url, nil
}

// createDatabase makes a new database on the server of url and returns
// the URL of it.
func createDatabase(ctx context.Context, url, name string) (string, error) {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return strings.Replace(url, "/postgres?", "/"+name+"?", 1), nil
}

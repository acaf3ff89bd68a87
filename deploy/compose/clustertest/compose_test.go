package clustertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// compose runs one project of the compose file: its own name, so that it
// never touches a cluster someone runs by hand, and every port published on
// a free loopback port, read back with "compose port".
type compose struct {
	t       *testing.T
	cmd     []string // "docker compose" or "docker-compose"
	dir     string   // deploy/compose
	project string
	env     []string
	ids     map[string]string // service -> container id, after up
}

// newCompose finds compose (the docker plugin, else docker-compose), and
// registers the teardown: "down -v" even when the test fails, after
// printing every service's last log lines.
func newCompose(t *testing.T, crewdImage, natsImage, otelcolImage string, env ...string) *compose {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var cmd []string
	switch {
	case exec.Command("docker", "compose", "version").Run() == nil:
		cmd = []string{"docker", "compose"}
	case exec.Command("docker-compose", "version").Run() == nil:
		cmd = []string{"docker-compose"}
	default:
		t.Fatal("a Docker engine answers but there is no compose: install the compose plugin or docker-compose")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	c := &compose{t: t, cmd: cmd, dir: dir, project: "crewclustertest" + hex.EncodeToString(b[:])}
	c.env = append(os.Environ(), "CREWD_IMAGE="+crewdImage, "NATS_IMAGE="+natsImage, "OTELCOL_IMAGE="+otelcolImage)
	for _, v := range []string{"CREWD1_PORT", "CREWD2_PORT", "CREWD3_PORT", "CREWD1_ADMIN_PORT", "CREWD2_ADMIN_PORT", "CREWD3_ADMIN_PORT",
		"NATS1_CLIENT_PORT", "NATS2_CLIENT_PORT", "NATS3_CLIENT_PORT", "NATS1_MONITOR_PORT", "NATS2_MONITOR_PORT", "NATS3_MONITOR_PORT",
		"OTELCOL_PORT"} {
		c.env = append(c.env, v+"=") // empty: any free port
	}
	c.env = append(c.env, "CREW_API_TOKENS_FILE="+tokenFile(t))
	c.env = append(c.env, env...)
	t.Cleanup(c.down)
	return c
}

// run runs one compose command and returns its standard output.
func (c *compose) run(ctx context.Context, args ...string) (string, error) {
	full := append(append(append([]string{}, c.cmd[1:]...), "-f", filepath.Join(c.dir, "compose.yaml"), "-p", c.project), args...)
	return c.exec(ctx, c.cmd[0], full...)
}

// docker runs one docker command and returns its standard output.
func (c *compose) docker(ctx context.Context, args ...string) (string, error) {
	return c.exec(ctx, "docker", args...)
}

func (c *compose) exec(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = c.dir, c.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// containers resolves the id of services' containers, once: an id
// stays the same across kill and start, and docker is much faster than
// compose at the commands that follow.
func (c *compose) containers(ctx context.Context, services ...string) error {
	if c.ids == nil {
		c.ids = map[string]string{}
	}
	for _, s := range services {
		id, err := c.run(ctx, "ps", "-q", s)
		if err == nil && id == "" {
			err = fmt.Errorf("service %s has no container", s)
		}
		if err != nil {
			return err
		}
		c.ids[s] = id
	}
	return nil
}

// addr is where a service's port is published on the host: "127.0.0.1:49153".
func (c *compose) addr(ctx context.Context, service string, port int) (string, error) {
	a, err := c.docker(ctx, "port", c.ids[service], fmt.Sprintf("%d/tcp", port))
	if err == nil && (!strings.HasPrefix(a, "127.0.0.1:") || strings.Contains(a, "\n")) {
		err = fmt.Errorf("%s port %d published on %q, want 127.0.0.1 only", service, port, a)
	}
	return a, err
}

// network is the project's default network, the one every service is on.
func (c *compose) network() string { return c.project + "_default" }

// disconnect cuts a service's container off the network.
func (c *compose) disconnect(ctx context.Context, service string) error {
	_, err := c.docker(ctx, "network", "disconnect", c.network(), c.ids[service])
	return err
}

// connect puts a service's container back on the network under its
// service name, which the routes and crewd's URLs resolve.
func (c *compose) connect(ctx context.Context, service string) error {
	_, err := c.docker(ctx, "network", "connect", "--alias", service, c.network(), c.ids[service])
	return err
}

// kill sends SIGKILL to a service's container: no shutdown, no last ack.
func (c *compose) kill(ctx context.Context, service string) error {
	_, err := c.docker(ctx, "kill", c.ids[service])
	return err
}

// stop stops a service's container as Kubernetes stops a pod: SIGTERM,
// then SIGKILL after the grace period.
func (c *compose) stop(ctx context.Context, service string) error {
	_, err := c.docker(ctx, "stop", "-t", "15", c.ids[service])
	return err
}

// start starts a service's stopped container again (what "compose start"
// does).
func (c *compose) start(ctx context.Context, service string) error {
	_, err := c.docker(ctx, "start", c.ids[service])
	return err
}

// file reads one file out of a service's container (docker cp, which
// works on a scratch image: there is no shell to cat with).
func (c *compose) file(ctx context.Context, service, path string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "docker", "cp", c.ids[service]+":"+path, "-")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("docker cp %s:%s: %v: %s", service, path, err, strings.TrimSpace(errOut.String()))
	}
	tr := tar.NewReader(&out) // docker cp writes a tar stream to stdout
	if _, err := tr.Next(); err != nil {
		return nil, fmt.Errorf("docker cp %s:%s: %v", service, path, err)
	}
	return io.ReadAll(tr)
}

// down prints the logs when the test failed, then removes the project's
// containers, network and volumes.
func (c *compose) down() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if c.t.Failed() {
		if logs, err := c.run(ctx, "logs", "--no-color", "--tail", "40"); err == nil {
			c.t.Logf("last log lines of every service:\n%s", logs)
		}
	}
	if _, err := c.run(ctx, "down", "-v", "--remove-orphans", "-t", "5"); err != nil {
		c.t.Errorf("teardown: %v", err)
	}
}

package node

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// checkNATSAuth: every NATS server of the install asks for TLS and a user:
// a client that does not start TLS is cut off, one with TLS and no user
// (or a wrong password) told "Authorization Violation", and crewd's user, with
// the password and the CA of the install's Secrets, is let in. Each
// attempt is logged with its answer.
func checkNATSAuth(ctx context.Context, t *testing.T) {
	t.Helper()
	secret := func(name, key string) []byte {
		enc, err := kube(ctx, "-n", namespace, "get", "secret", name, "-o", "jsonpath={.data."+strings.ReplaceAll(key, ".", `\.`)+"}")
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
		if err != nil || len(raw) == 0 {
			t.Fatalf("secret %s key %s: %q %v", name, key, enc, err)
		}
		return raw
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret("crewd-nats-tls", "ca.crt")) {
		t.Fatal("crewd-nats-tls: no CA certificate")
	}
	password := strings.TrimSpace(string(secret("crewd-nats-auth", "crewd-password")))
	natses, err := readyPods(ctx, namespace, natsSelector)
	if err != nil || len(natses) == 0 {
		t.Fatalf("NATS pods: %v %v", natses, err)
	}
	for _, n := range names(natses) {
		addr := net.JoinHostPort(natses[n], "4222")
		for _, tc := range []struct {
			what       string
			tls        bool
			user, pass string
			want       string
		}{
			{"no TLS", false, "", "", "closed"}, // the server closes a client that does not start TLS
			{"TLS, no user", true, "", "", "-ERR 'Authorization Violation'"},
			{"TLS, crewd with a wrong password", true, "crewd", "guess", "-ERR 'Authorization Violation'"},
			{"TLS, crewd with its password", true, "crewd", password, "PONG"},
		} {
			got, err := natsConnect(ctx, addr, pool, tc.tls, tc.user, tc.pass)
			if err != nil {
				got = "error: " + err.Error()
			}
			t.Logf("NATS %s (%s), %s: %s", n, addr, tc.what, got)
			refused := tc.want == "closed" && (strings.HasPrefix(got, "error: ") || strings.HasPrefix(got, "-ERR"))
			if !refused && !strings.HasPrefix(got, tc.want) {
				t.Errorf("NATS %s, %s: %q, want %q", n, tc.what, got, tc.want)
			}
		}
	}
}

// natsConnect speaks NATS's client protocol to addr: reads the server's
// INFO, upgrades to TLS (checking the certificate against pool, by the
// Service's name) when asked, sends CONNECT with the user and a PING, and
// returns the first line the server answers with.
func natsConnect(ctx context.Context, addr string, pool *x509.CertPool, useTLS bool, user, pass string) (string, error) {
	d := net.Dialer{Timeout: 3 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	info, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(info, "INFO ") {
		return "", fmt.Errorf("no INFO: %q %v", info, err)
	}
	var c net.Conn = conn
	if useTLS {
		tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: "crewd-nats", MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			return "", fmt.Errorf("TLS: %w", err)
		}
		c, r = tc, bufio.NewReader(tc)
	}
	opts := map[string]any{"verbose": false, "pedantic": false, "lang": "go", "version": "node-test", "protocol": 1}
	if user != "" {
		opts["user"], opts["pass"] = user, pass
	}
	connect, _ := json.Marshal(opts)
	if _, err := fmt.Fprintf(c, "CONNECT %s\r\nPING\r\n", connect); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	return strings.TrimSpace(line), err
}

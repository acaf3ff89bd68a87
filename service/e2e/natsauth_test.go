package e2e_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/nats-io/nats-server/v2/server"
)

// testCA makes a certificate authority and a server certificate it signs
// for 127.0.0.1, in dir: ca.pem, and the server's key pair.
func testCA(t *testing.T, dir string) (caFile string, cert tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "crew test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "nats"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestNATSUserAndTLS: crewd reaches a NATS that asks for TLS and a user
// whose permissions are jsjobs.PermissionsFor its stream and bucket, and
// nothing more, and runs jobs through it; without the CA, or with a wrong
// password, it does not get in.
func TestNATSUserAndTLS(t *testing.T) {
	dir := t.TempDir()
	caFile, cert := testCA(t, dir)
	perms := jsjobs.PermissionsFor("jobs", "jobs")
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
		TLS: true, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, TLSTimeout: 2,
		Users: []*server.User{{Username: "crewd", Password: "s3cret-pass", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: perms.Publish}, Subscribe: &server.SubjectPermission{Allow: perms.Subscribe}}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the server did not start")
	}
	url := "tls://" + srv.Addr().String()
	password := filepath.Join(dir, "password")
	if err := os.WriteFile(password, []byte("s3cret-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := start(t, "-nats-url", url, "-nats-user", "crewd", "-nats-password-file", password, "-nats-ca", caFile)
	o := post(c.http+"/v1/jobs", `{"kind":"sleep","duration":"10ms"}`)
	if o.code != 202 {
		t.Fatalf("a job through a NATS with TLS and a user: %+v", o)
	}
	waitJob(t, c, o.jobID, "succeeded", 10*time.Second)
	c.mu.Lock()
	for _, line := range c.log {
		if msg, _ := line["msg"].(string); strings.Contains(msg, "Permissions Violation") || strings.Contains(fmt.Sprint(line["error"]), "Permissions Violation") {
			t.Errorf("a permission violation: %v", line)
		}
	}
	c.mu.Unlock()

	wrong := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrong, []byte("guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"a wrong password": {"-nats-user", "crewd", "-nats-password-file", wrong, "-nats-ca", caFile},
		"no CA":            {"-nats-user", "crewd", "-nats-password-file", password},
		"no user":          {"-nats-ca", caFile},
	} {
		cmd := exec.Command(binary, append([]string{"-http-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-nats-url", url}, args...)...)
		cmd.Env = append(os.Environ(), "CREW_SHUTDOWN_TIMEOUT=6s", "CREW_SHUTDOWN_DELAY=0s")
		out, err := runFor(cmd, 45*time.Second)
		if err == nil {
			t.Errorf("%s: crewd ran: %s", name, out)
		} else {
			t.Logf("%s: %v, %s", name, err, lastLine(out))
		}
		if strings.Contains(out, "s3cret-pass") || strings.Contains(out, "guess") {
			t.Errorf("%s: the password is in crewd's output", name)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// runFor runs cmd, killed after d, and returns its output.
func runFor(cmd *exec.Cmd, d time.Duration) (string, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return out.String(), nil // still running: it got in, or waits to
	}
}

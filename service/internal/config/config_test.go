package config_test

import (
	"bytes"
	"errors"
	"flag"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/service/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := config.Parse(nil, env(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:8080" || c.AdminAddr != ":9090" || c.Workers != runtime.GOMAXPROCS(0) || c.ShutdownMode != crew.DrainThenHard {
		t.Fatalf("defaults: %+v", c)
	}
	// The stop fits in Kubernetes' default grace period of 30 s.
	if c.ShutdownTimeout >= 30*time.Second {
		t.Fatalf("shutdown timeout %v does not fit a 30 s grace period", c.ShutdownTimeout)
	}
	// Jobs are durable by default, through an embedded server.
	if !c.Durable() || !c.Embedded() || c.DataDir == "" || c.NATSStream != "jobs" || c.NATSConsumer != "crewd" || c.NATSReplicas != 1 {
		t.Fatalf("jobs default: %+v", c)
	}
}

// TestJobPaths: -nats-url picks where jobs go, and the settings of the
// other paths do not matter there.
func TestJobPaths(t *testing.T) {
	for _, tc := range []struct {
		args              []string
		durable, embedded bool
	}{
		{nil, true, true},
		{[]string{"-nats-url", "off", "-data-dir", "", "-nats-stream", "not.checked"}, false, false},
		{[]string{"-nats-url", "nats://a:4222, tls://b:4222", "-data-dir", ""}, true, false},
	} {
		c, err := config.Parse(tc.args, env(nil), &bytes.Buffer{})
		if err != nil || c.Durable() != tc.durable || c.Embedded() != tc.embedded {
			t.Errorf("Parse(%q): %v, durable %v, embedded %v", tc.args, err, c.Durable(), c.Embedded())
		}
	}
	c, err := config.Parse(nil, env(map[string]string{"CREW_NATS_URL": "nats://n:4222", "CREW_DATA_DIR": "/data", "CREW_NATS_REPLICAS": "3"}), &bytes.Buffer{})
	if err != nil || c.NATSURL != "nats://n:4222" || c.DataDir != "/data" || c.NATSReplicas != 3 {
		t.Fatalf("CREW_NATS_URL, CREW_DATA_DIR: %v %+v", err, c)
	}
}

func TestEnvironmentThenFlags(t *testing.T) {
	c, err := config.Parse([]string{"-workers", "7"}, env(map[string]string{
		"CREW_WORKERS": "3", "CREW_QUEUE": "64", "CREW_SHUTDOWN_MODE": "soft", "CREW_SHUTDOWN_DELAY": "2s",
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Workers != 7 || c.Queue != 64 || c.ShutdownMode != crew.Soft || c.ShutdownDelay != 2*time.Second {
		t.Fatalf("flags should win over the environment: %+v", c)
	}
}

// TestNATSInOrder: CREW_NATS_IN_ORDER keeps the order of -nats-url's
// servers; by default nats.go picks one at random.
func TestNATSInOrder(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"CREW_NATS_URL": "nats://a:4222,nats://b:4222"}, false},
		{map[string]string{"CREW_NATS_URL": "nats://a:4222,nats://b:4222", "CREW_NATS_IN_ORDER": "true"}, true},
	} {
		c, err := config.Parse(nil, env(tc.env), &bytes.Buffer{})
		if err != nil || c.NATSInOrder != tc.want {
			t.Errorf("%v: in order %v (%v), want %v", tc.env, c.NATSInOrder, err, tc.want)
		}
	}
}

// TestWorkersFromTheQuota: -workers quota (or CREW_WORKERS=quota) is the
// container's CPU quota rounded down, as crew.CPUBound reads it.
func TestWorkersFromTheQuota(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"-workers", "quota"}, nil},
		{nil, map[string]string{"CREW_WORKERS": "quota"}},
	} {
		got, err := config.Parse(c.args, env(c.env), &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Workers != crew.CPUBound() || got.Workers < 1 {
			t.Fatalf("%v %v: workers %d, want crew.CPUBound() = %d", c.args, c.env, got.Workers, crew.CPUBound())
		}
	}
	if _, err := config.Parse([]string{"-workers", "quotas"}, env(nil), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "workers") {
		t.Fatalf("-workers quotas: %v", err)
	}
}

// TestBadSettingsSayWhich: every bad setting is refused with a message
// that names it.
func TestBadSettingsSayWhich(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"-workers", "-1"}, want: "-workers -1"},
		{args: []string{"-workers", "x"}, want: "workers"},
		{env: map[string]string{"CREW_WORKERS": "lots"}, want: "CREW_WORKERS"},
		{args: []string{"-shutdown-delay", "soon"}, want: "shutdown-delay"},
		{env: map[string]string{"CREW_SHUTDOWN_TIMEOUT": "5"}, want: "CREW_SHUTDOWN_TIMEOUT"},
		{args: []string{"-shutdown-mode", "gentle"}, want: `shutdown mode "gentle"`},
		{args: []string{"-shutdown-delay", "30s", "-shutdown-timeout", "10s"}, want: "-shutdown-timeout 10s"},
		{args: []string{"-queue", "0"}, want: "-queue 0"},
		{args: []string{"-log-level", "loud"}, want: "-log-level"},
		{args: []string{"-retry-after", "10ms"}, want: "-retry-after"},
		{args: []string{"-max-job-timeout", "1s"}, want: "-job-timeout"},
		{args: []string{"stray"}, want: `unexpected argument "stray"`},
		{args: []string{"-no-such-flag"}, want: "no-such-flag"},
		{args: []string{"-nats-url", "localhost:4222"}, want: `-nats-url "localhost:4222": scheme`},
		{env: map[string]string{"CREW_NATS_URL": "nats://"}, want: "no host"},
		{args: []string{"-nats-url", "nats://a:4222,http://b"}, want: `scheme "http"`},
		{args: []string{"-data-dir", ""}, want: "-data-dir: empty"},
		{args: []string{"-nats-url", "nats://a:4222", "-nats-listen", "127.0.0.1:4222"}, want: "-nats-listen is for the embedded server"},
		{args: []string{"-nats-listen", "127.0.0.1"}, want: "-nats-listen"},
		{args: []string{"-nats-listen", "127.0.0.1:70000"}, want: "bad port"},
		{args: []string{"-nats-stream", "jobs.x"}, want: "-nats-stream"},
		{args: []string{"-nats-consumer", ""}, want: "-nats-consumer"},
		{args: []string{"-nats-bucket", "a b"}, want: "-nats-bucket"},
		{args: []string{"-nats-ack-wait", "100ms"}, want: "-nats-ack-wait 100ms"},
		{args: []string{"-job-max-attempts", "-1"}, want: "-job-max-attempts -1"},
		{args: []string{"-nats-url", "nats://a:4222", "-nats-replicas", "0"}, want: "-nats-replicas 0: want 1 to 5"},
		{args: []string{"-job-partitions", "0"}, want: "-job-partitions 0: want 1 to 256"},
		{env: map[string]string{"CREW_JOB_PARTITIONS": "257"}, want: "-job-partitions 257: want 1 to 256"},
		{args: []string{"-nats-url", "off", "-job-partitions", "3"}, want: "jobs in memory have no partitions"},
		{env: map[string]string{"CREW_NATS_URL": "nats://a:4222", "CREW_NATS_REPLICAS": "6"}, want: "-nats-replicas 6: want 1 to 5"},
		{env: map[string]string{"CREW_NATS_REPLICAS": "three"}, want: "CREW_NATS_REPLICAS"},
		{args: []string{"-nats-replicas", "3"}, want: "the embedded server is one server"},
		{args: []string{"-nats-creds", "/x.creds"}, want: "-nats-creds /x.creds: for the servers of -nats-url"},
		{args: []string{"-nats-in-order"}, want: "-nats-in-order are for the servers of -nats-url"},
		{env: map[string]string{"CREW_NATS_URL": "nats://a:4222", "CREW_NATS_IN_ORDER": "maybe"}, want: "CREW_NATS_IN_ORDER"},
		{args: []string{"-job-queues", "email"}, want: `"email": want name=workers`},
		{args: []string{"-job-queues", "email=four"}, want: `workers "four": not a number`},
		{args: []string{"-job-queues", "email=4/x"}, want: `limit "x": not a number`},
		{args: []string{"-job-queues", "e.mail=4"}, want: `-job-queues "e.mail"`},
		{args: []string{"-job-queues", "email=0"}, want: "-job-queues email: workers 0"},
		{args: []string{"-job-queues", "email=2/-1"}, want: "-job-queues email: limit -1"},
		{args: []string{"-job-queues", "email=2,email=3"}, want: "-job-queues email: named twice"},
		{args: []string{"-job-queues", "default=2"}, want: "-job-queues default: the default queue"},
		{args: []string{"-job-queues", "email=2@x"}, want: `rate "x": not a number`},
		{args: []string{"-trace-url", "https://jaeger.example/trace"}, want: `-trace-url "https://jaeger.example/trace": want {trace_id}`},
		{args: []string{"-trace-url", "ftp://x/{trace_id}"}, want: "want an http or https address"},
		{args: []string{"-job-queues", "email=2@5/soon"}, want: `rate's period "soon": not a duration`},
		{args: []string{"-job-queues", "email=2@-5"}, want: `-job-queues email: "rate" -5`},
		{args: []string{"-job-queues", "email=2@5/1ns"}, want: `-job-queues email: "per" 1ns`},
		{env: map[string]string{"CREW_NATS_URL": "off", "CREW_JOB_QUEUES": "email=2"}, want: "-job-queues: named queues need the JetStream store"},
	} {
		_, err := config.Parse(tc.args, env(tc.env), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %v) = %v, want an error naming %q", tc.args, tc.env, err, tc.want)
		}
	}
}

// TestJobQueues: -job-queues and CREW_JOB_QUEUES read
// name=workers[/limit][@rate[/period]] lists.
func TestJobQueues(t *testing.T) {
	c, err := config.Parse([]string{"-job-queues", "email=4, partner=2/3@20,report=1@100/1m"}, env(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := []config.JobQueue{{Name: "email", Workers: 4}, {Name: "partner", Workers: 2, Limit: 3, Rate: 20}, {Name: "report", Workers: 1, Rate: 100, Per: time.Minute}}
	if !slices.Equal(c.JobQueues, want) {
		t.Fatalf("-job-queues: %+v, want %+v", c.JobQueues, want)
	}
	c, err = config.Parse(nil, env(map[string]string{"CREW_JOB_QUEUES": "reports=1"}), &bytes.Buffer{})
	if err != nil || len(c.JobQueues) != 1 || c.JobQueues[0] != (config.JobQueue{Name: "reports", Workers: 1}) {
		t.Fatalf("CREW_JOB_QUEUES: %+v (%v)", c.JobQueues, err)
	}
}

// TestHelpListsEverySettingWithItsDefaultAndVariable.
func TestHelpListsEverySettingWithItsDefaultAndVariable(t *testing.T) {
	var out bytes.Buffer
	_, err := config.Parse([]string{"-h"}, env(nil), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Parse(-h) = %v", err)
	}
	for _, want := range []string{"-http-addr", `(default "127.0.0.1:8080")`, "-api-tokens", "CREW_API_TOKENS", "-insecure-no-auth", "-pprof", "CREW_HTTP_ADDR", "-admin-addr", "-workers", "CREW_WORKERS",
		"-queue", "-shutdown-delay", "(default 5s)", "-shutdown-timeout", "(default 25s)", "-shutdown-mode", `(default "drain-then-hard")`,
		"-nats-url", "CREW_NATS_URL", "-data-dir", "CREW_DATA_DIR", `(default "crewd-data")`, "-nats-replicas", "CREW_NATS_REPLICAS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-h does not show %q:\n%s", want, out.String())
		}
	}
}

// TestSecureByDefault: without a token file the API serves loopback only,
// and another address is refused with what to do, unless
// -insecure-no-auth says to serve everyone; with one, every interface.
func TestSecureByDefault(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		addr    string // "" for refused
		refusal string
	}{
		{args: nil, addr: "127.0.0.1:8080"},
		{args: []string{"-http-addr", "localhost:9999"}, addr: "localhost:9999"},
		{args: []string{"-http-addr", "[::1]:80"}, addr: "[::1]:80"},
		{args: []string{"-api-tokens", "t"}, addr: ":8080"},
		{env: map[string]string{"CREW_API_TOKENS": "t"}, addr: ":8080"},
		{args: []string{"-api-tokens", "t", "-http-addr", "10.0.0.1:8080"}, addr: "10.0.0.1:8080"},
		{args: []string{"-insecure-no-auth"}, addr: ":8080"},
		{env: map[string]string{"CREW_INSECURE_NO_AUTH": "true", "CREW_HTTP_ADDR": "0.0.0.0:1"}, addr: "0.0.0.0:1"},
		{args: []string{"-http-addr", ":8080"}, refusal: "crewd token new"},
		{env: map[string]string{"CREW_HTTP_ADDR": "0.0.0.0:8080"}, refusal: "-insecure-no-auth"},
		{args: []string{"-http-addr", "example.com:80"}, refusal: "without -api-tokens"},
		{args: []string{"-http-addr", "127.0.0.1.evil:80"}, refusal: "without -api-tokens"},
		{args: []string{"-api-tokens", "t", "-insecure-no-auth"}, refusal: "choose one"},
		{args: []string{"-nats-listen", ":4222"}, refusal: "asks its clients for no credentials"},
		{args: []string{"-api-tokens", "t", "-nats-listen", "0.0.0.0:4222"}, refusal: "asks its clients for no credentials"},
		{args: []string{"-nats-listen", "127.0.0.1:4222"}, addr: "127.0.0.1:8080"},
		{args: []string{"-insecure-no-auth", "-nats-listen", ":4222"}, addr: ":8080"},
	} {
		c, err := config.Parse(tc.args, env(tc.env), &bytes.Buffer{})
		switch {
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%q %v: %v, want refused saying %q", tc.args, tc.env, err, tc.refusal)
		case tc.refusal == "" && (err != nil || c.HTTPAddr != tc.addr):
			t.Errorf("%q %v: %v, address %q, want %q", tc.args, tc.env, err, c.HTTPAddr, tc.addr)
		}
	}
}

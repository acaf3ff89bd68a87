package prom_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveMetrics serves reg at /metrics on a loopback port until the test
// ends, and returns the host:port.
func serveMetrics(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

// httpClient keeps no connection open, so that no client goroutine
// outlives a test.
var httpClient = http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

// get fetches url and fails the test unless the answer is 200 OK.
func get(t *testing.T, url string) (body []byte, contentType string) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	return body, resp.Header.Get("Content-Type")
}

// TestScrapePassesPromtool serves a held pool's metrics over HTTP and lints
// the scraped text with promtool check metrics.
func TestScrapePassesPromtool(t *testing.T) {
	promtool := requireBinary(t, "promtool")
	s := newScene(t, "http", 2, 4, 1)
	c, err := prom.NewCollector(s.pool, prom.WithTaskMetrics(s.tasks))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	addr := serveMetrics(t, reg)

	body, contentType := get(t, "http://"+addr+"/metrics")
	if !strings.HasPrefix(contentType, "text/plain") {
		t.Errorf("Content-Type %q, want the text format", contentType)
	}
	for _, line := range []string{
		`crew_queue_length{pool="http"} 4`,
		`crew_submitters_waiting{pool="http"} 1`,
		`crew_workers_busy{pool="http"} 2`,
		`crew_tasks_total{outcome="timed_out",pool="http"} 1`,
		`crew_task_run_seconds_count{pool="http",task="ok"} 3`,
	} {
		if !bytes.Contains(body, []byte(line+"\n")) {
			t.Errorf("scrape lacks %q", line)
		}
	}

	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s\nscraped:\n%s", err, out, body)
	}
}

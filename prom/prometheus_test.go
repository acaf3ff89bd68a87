package prom_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
)

// TestPrometheusScrapesHeldPool starts a real Prometheus server on loopback,
// lets it scrape a pool held under load (workers busy, queue full, submitters
// blocked) and checks through its HTTP API that the series, the autoscaling
// query, the recording rule and the pending saturation alert all show what
// the pool had.
func TestPrometheusScrapesHeldPool(t *testing.T) {
	bin := requireBinary(t, "prometheus")
	s := newScene(t, "itest", 3, 8, 2)
	c, err := prom.NewCollector(s.pool, prom.WithTaskMetrics(s.tasks))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	target := serveMetrics(t, reg)
	api := startPrometheus(t, bin, target)

	backlog := float64(s.want.Queued + s.want.Waiting)
	for _, q := range []struct {
		query string
		want  float64
	}{
		{`crew_queue_length{job="crew",pool="itest"}`, float64(s.want.Queued)},
		{`crew_queue_capacity{pool="itest"}`, float64(s.want.QueueCapacity)},
		{`crew_submitters_waiting{pool="itest"}`, float64(s.want.Waiting)},
		{`crew_workers_busy{pool="itest"}`, float64(s.want.Busy)},
		{`crew_tasks_total{pool="itest",outcome="rejected"}`, float64(s.want.Rejected)},
		{`crew_tasks_submitted_total{pool="itest"}`, float64(s.want.Submitted)},
		{`crew_task_run_seconds_count{pool="itest",task="ok"}`, sceneSucceeded},
		{`sum(crew_queue_length) + sum(crew_submitters_waiting)`, backlog},
		{`job:crew_backlog:sum{job="crew"}`, backlog},
		{`count(ALERTS{alertname="CrewQueueSaturated",alertstate="pending",pool="itest"})`, 1},
	} {
		if got := api.await(t, q.query); got != q.want {
			t.Errorf("%s = %v, want %v", q.query, got, q.want)
		}
	}
	if got := s.pool.Stats(); got != s.want {
		t.Errorf("the pool moved while Prometheus scraped it:\n got %+v\nwant %+v", got, s.want)
	}
}

// prometheusAPI is a Prometheus server started by the test.
type prometheusAPI struct {
	base string
	log  *lockedBuffer
}

// startPrometheus runs bin on a free loopback port, with its own config and
// data directory, scraping target every second and evaluating the rules of
// rules/crew-rules.yml every second. The server is killed when the test
// ends.
func startPrometheus(t *testing.T, bin, target string) *prometheusAPI {
	t.Helper()
	rules, err := filepath.Abs("rules/crew-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: crew
    static_configs:
      - targets: [%q]
`, rules, target)
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := freeLoopbackAddr(t)
	log := &lockedBuffer{}
	cmd := exec.Command(bin,
		"--config.file="+configFile,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen,
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("prometheus log:\n%s", log.String())
		}
	})
	return &prometheusAPI{base: "http://" + listen, log: log}
}

// await polls an instant query until it returns exactly one sample, and
// returns its value. Prometheus is another process on its own clock (one
// scrape and one rule evaluation a second, and the 'for' of an alert
// counted from its first evaluation), so the test polls with a deadline.
func (p *prometheusAPI) await(t *testing.T, query string) float64 {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for {
		v, n, raw := p.query(t, query)
		if n == 1 {
			return v
		}
		last = raw
		if time.Now().After(deadline) {
			t.Fatalf("query %s: no single sample within a minute; last answer %s\nprometheus log:\n%s", query, last, p.log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// query runs an instant query and returns the first sample's value, the
// number of samples and the raw answer.
func (p *prometheusAPI) query(t *testing.T, query string) (float64, int, string) {
	t.Helper()
	body, err := tryGet(p.base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, 0, err.Error() // not up yet
	}
	var answer struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.Status != "success" {
		t.Fatalf("query %s: %v\n%s", query, err, body)
	}
	if len(answer.Data.Result) == 0 {
		return 0, 0, string(body)
	}
	s, _ := answer.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %s: value %q: %v", query, s, err)
	}
	return v, len(answer.Data.Result), string(body)
}

func tryGet(u string) ([]byte, error) {
	resp, err := httpClient.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", resp.Status, b.Bytes())
	}
	return b.Bytes(), nil
}

// freeLoopbackAddr returns a loopback address with a port free a moment
// ago, for a server that cannot be handed a listener.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

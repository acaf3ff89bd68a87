package natsprom_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs/natsprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollectorExportsStatsAndLag(t *testing.T) {
	src, run := setup(t, 5)
	c, err := natsprom.NewCollector(src)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	// Before Run: nothing received, the whole stream is lag, once the
	// server has counted the last publish for the consumer (it does so
	// after the publish's ack: a scrape right after may see one less).
	deadline := time.Now().Add(10 * time.Second)
	for {
		lag, err := src.Lag(context.Background())
		if err == nil && lag == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag %d (%v), want 5 within 10 s", lag, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	want := `
# HELP natsjs_consumer_lag The consumer's lag on the server: messages not yet delivered plus messages delivered and not yet acked.
# TYPE natsjs_consumer_lag gauge
natsjs_consumer_lag{consumer="crewd",stream="jobs"} 5
# HELP natsjs_messages_received_total Messages delivered to the Source.
# TYPE natsjs_messages_received_total counter
natsjs_messages_received_total{consumer="crewd",stream="jobs"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "natsjs_consumer_lag", "natsjs_messages_received_total"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	deadline = time.Now().Add(10 * time.Second)
	for src.Stats().Acked < 5 {
		if time.Now().After(deadline) {
			t.Fatal("not acked within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want = `
# HELP natsjs_messages_total Messages settled, by outcome: acked, naked (a failure, retried after a backoff), termed (after the last attempt), handed_back (naked without delay by a stop), unavailable (run again after a short delay on the same delivery: the handler reported an outage of what it needs, not a failure), lease_lost.
# TYPE natsjs_messages_total counter
natsjs_messages_total{consumer="crewd",outcome="acked",stream="jobs"} 5
natsjs_messages_total{consumer="crewd",outcome="handed_back",stream="jobs"} 0
natsjs_messages_total{consumer="crewd",outcome="lease_lost",stream="jobs"} 0
natsjs_messages_total{consumer="crewd",outcome="naked",stream="jobs"} 0
natsjs_messages_total{consumer="crewd",outcome="termed",stream="jobs"} 0
natsjs_messages_total{consumer="crewd",outcome="unavailable",stream="jobs"} 0
# HELP natsjs_messages_held Messages held now, by state: waiting (not started), resting (waiting out an outage's delay before it runs again) or running (started: its handler running, or its ack awaiting the server's confirmation).
# TYPE natsjs_messages_held gauge
natsjs_messages_held{consumer="crewd",state="resting",stream="jobs"} 0
natsjs_messages_held{consumer="crewd",state="running",stream="jobs"} 0
natsjs_messages_held{consumer="crewd",state="waiting",stream="jobs"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "natsjs_messages_total", "natsjs_messages_held"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 16 {
		t.Fatalf("%d series (%v), want 16", n, err)
	}
	// The pulls sent: at least one brought the five, and Stats counts them.
	if got, want := value(t, reg, "natsjs_pulls_total"), float64(src.Stats().Pulls); got != want || want < 1 {
		t.Fatalf("natsjs_pulls_total = %v, want Stats().Pulls %v (at least 1)", got, want)
	}
	// The window of the last pull decision, as Stats has it.
	if got, want := value(t, reg, "natsjs_window"), float64(src.Stats().Window); got != want || want < 2 {
		t.Fatalf("natsjs_window = %v, want Stats().Window %v (at least the minimum, 2)", got, want)
	}
}

func TestCollectorWithoutLagAsksNothing(t *testing.T) {
	src, _ := setup(t, 1)
	c, err := natsprom.NewCollector(src, natsprom.WithoutLag())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if n, err := testutil.GatherAndCount(reg, "natsjs_consumer_lag"); err != nil || n != 0 {
		t.Fatalf("lag series %d (%v), want none", n, err)
	}
}

func TestNewCollectorRejectsBadInput(t *testing.T) {
	src, _ := setup(t, 0)
	for name, call := range map[string]func() (*natsprom.Collector, error){
		"nil source":   func() (*natsprom.Collector, error) { return natsprom.NewCollector(nil) },
		"nil option":   func() (*natsprom.Collector, error) { return natsprom.NewCollector(src, nil) },
		"zero timeout": func() (*natsprom.Collector, error) { return natsprom.NewCollector(src, natsprom.WithLagTimeout(0)) },
	} {
		if c, err := call(); !errors.Is(err, natsprom.ErrInvalidOption) || c != nil {
			t.Errorf("%s: %v, %v; want ErrInvalidOption", name, c, err)
		}
	}
}

// value is the value of the one series of name in reg, a counter or a gauge.
func value(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no single %s series", name)
	return 0
}

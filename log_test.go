package crew_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if k := repeatedKey(line); k != "" {
			t.Errorf("log line repeats the key %q (a parser that keeps the last one misfiles it): %s", k, line)
		}
		out = append(out, m)
	}
	return out
}

// repeatedKey returns a top-level key that a JSON object has twice, or "".
func repeatedKey(line string) string {
	d := json.NewDecoder(strings.NewReader(line))
	if _, err := d.Token(); err != nil { // {
		return ""
	}
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		k, _ := tok.(string)
		if seen[k] {
			return k
		}
		seen[k] = true
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return ""
		}
	}
	return ""
}

// TestLogLinesRepeatNoKey: slog's own keys (time, level, msg) and each
// attribute appear once per line, in every line the pool writes, escalated
// stops included.
func TestLogLinesRepeatNoKey(t *testing.T) {
	if k := repeatedKey(`{"level":"INFO","msg":"m","level":"drain"}`); k != "level" {
		t.Fatalf("repeatedKey missed a repeated key: %q", k)
	}
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		p := newPool(t, crew.WithWorkers(1), crew.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
		g := newGate()
		submit(t, p, g.ignore)
		g.waitStarted(t, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		stopped := make(chan error)
		go func() { stopped <- p.Shutdown(ctx, crew.DrainThenHard) }()
		synctest.Wait()
		time.Sleep(2 * time.Second) // past the deadline: the stop escalates and reports the stuck task
		g.open()
		<-stopped
		if recs := buf.records(t); len(recs) < 3 {
			t.Fatalf("want the start, the escalation and the end of the stop, got %d lines", len(recs))
		}
	})
}

func TestLoggerRecordsPanicsControlAndShutdown(t *testing.T) {
	synctest.Test(t, testLogger)
}

func testLogger(t *testing.T) {
	var buf syncBuffer
	p := newPool(t, crew.WithName("jobs"), crew.WithWorkers(1),
		crew.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	_ = p.Pause()
	_ = p.Resume()
	_ = p.Resize(2)
	task := submit(t, p, func(context.Context) error { panic("kaboom") }, crew.Named("bad"))
	_ = task.Wait()
	g := newGate()
	submit(t, p, g.ignore)
	g.waitStarted(t, 1)
	_ = p.Pause()
	queued := submit(t, p, g.ignore)
	stopped := make(chan error)
	go func() { stopped <- p.Shutdown(context.Background(), crew.Soft) }()
	synctest.Wait() // shutdown has started with one task running
	g.open()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	_ = queued.Wait()

	recs := buf.records(t)
	var msgs []string
	for _, r := range recs {
		msgs = append(msgs, r["msg"].(string))
		if r["pool"] != "jobs" {
			t.Errorf("record without the pool's name: %v", r)
		}
	}
	want := []string{"crew: paused", "crew: resumed", "crew: resized", "crew: task panicked", "crew: paused", "crew: shutdown started", "crew: shutdown finished"}
	if strings.Join(msgs, "|") != strings.Join(want, "|") {
		t.Fatalf("log messages %q, want %q", msgs, want)
	}
	panicked := recs[3]
	if panicked["task"] != "bad" || panicked["panic"] != "kaboom" || !strings.Contains(panicked["stack"].(string), "goroutine") {
		t.Errorf("panic record: %v", panicked)
	}
	end := recs[6]
	if end["succeeded"] != float64(1) || end["not_run"] != float64(1) {
		t.Errorf("shutdown end record: %v", end)
	}
}

func TestNoLoggerLogsNothing(t *testing.T) {
	// The default pool has no logger: a panic must not reach slog's default.
	var buf syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	p := newPool(t)
	_ = submit(t, p, func(context.Context) error { panic("quiet") }).Wait()
	_ = p.Shutdown(context.Background(), crew.Drain)
	if buf.b.Len() != 0 {
		t.Fatalf("logged without a logger: %s", buf.b.String())
	}
}

// TestAnUnusedPoolStopsQuietly: a pool stopped before it was given any
// task logs nothing of its stop, escalated or not, so that a program that
// fails to start says why first; one given a task logs its stop.
func TestAnUnusedPoolStopsQuietly(t *testing.T) {
	var buf syncBuffer
	p := newPool(t, crew.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	_ = p.Shutdown(context.Background(), crew.Soft)
	_ = p.Close()
	if buf.b.Len() != 0 {
		t.Fatalf("an unused pool logged its stop: %s", buf.b.String())
	}
	used := newPool(t, crew.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	if err := used.Go(func() {}); err != nil {
		t.Fatal(err)
	}
	_ = used.Shutdown(context.Background(), crew.Drain)
	if !strings.Contains(buf.b.String(), "crew: shutdown started") || !strings.Contains(buf.b.String(), "crew: shutdown finished") {
		t.Fatalf("a used pool's stop not logged: %s", buf.b.String())
	}
}

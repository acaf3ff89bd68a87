package durable_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/service/internal/durable"
	"github.com/crew-go/crew/service/internal/kinds"
)

// TestNamedQueuesServed: a crewd started with a named queue sets its limit
// on the store, runs its jobs on the queue's own pool (the main pool is
// busy with the default queue's), and stops it with the rest.
func TestNamedQueuesServed(t *testing.T) {
	pool, err := crew.New(crew.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	cfg := jsjobs.Config{Kinds: kinds.New(), AckWait: 5 * time.Second, Log: logger}
	d, err := durable.Start(durable.Settings{DataDir: t.TempDir(), Config: cfg,
		Queues: []durable.Queue{{Name: "email", Workers: 2, Limit: 1}}, ShutdownMode: crew.Drain}, logger, pool)
	if err != nil {
		t.Fatalf("Start: %v\n%s", err, log.String())
	}
	d.Run()
	ctx := context.Background()
	busy, err := d.Jobs().Submit(ctx, jobs.Spec{Kind: "sleep", Args: json.RawMessage(`{"duration":"3s"}`)})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := d.Jobs().Submit(ctx, jobs.Spec{Kind: "sleep", Args: json.RawMessage(`{"duration":"10ms"}`), Queue: "email"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	got, err := d.Jobs().(*jsjobs.Runner).Wait(wctx, rec.ID)
	if err != nil || got.State != jobs.Succeeded || got.Queue != "email" {
		t.Fatalf("a job of queue email, the default queue's one worker busy: %+v (%v)", got, err)
	}
	qs, err := d.Jobs().(jobs.Queuer).Queues(ctx)
	if err != nil || len(qs) != 2 || qs[1].Name != "email" || qs[1].Limit != 1 {
		t.Fatalf("queues %+v (%v), want email limited to 1", qs, err)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	go func() { _ = pool.Shutdown(sctx, crew.Hard) }()
	if err := d.StopPulling(sctx); err != nil {
		t.Fatalf("StopPulling: %v", err)
	}
	d.Close(logger)
	_ = busy
}

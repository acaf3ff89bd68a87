package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// asynqSystem is asynq on Redis at its defaults: a Client enqueues, a
// Server of sc.Workers concurrency runs the tasks in a worker process.
type asynqSystem struct {
	addr string // Redis
	tmp  string

	sc     scenario
	client *asynq.Client
	w      *workerProc
	t      *tracker
}

type sleepPayload struct {
	N     int           `json:"n"`
	Sleep time.Duration `json:"sleep"`
}

func (s *asynqSystem) Name() string { return "asynq" }

func (s *asynqSystem) Settings() string {
	return "Redis, asynq.Config{Concurrency: workers}, defaults otherwise"
}

func (s *asynqSystem) Start(ctx context.Context, sc scenario, t *tracker) error {
	rc := redis.NewClient(&redis.Options{Addr: s.addr})
	err := rc.FlushAll(ctx).Err()
	rc.Close()
	if err != nil {
		return err
	}
	s.sc, s.t = sc, t
	s.client = asynq.NewClient(asynq.RedisClientOpt{Addr: s.addr})
	s.w = &workerProc{
		args:    []string{"-system", "asynq", "-addr", s.addr, "-workers", strconv.Itoa(sc.Workers)},
		logPath: filepath.Join(s.tmp, "asynq-"+sc.Name+".log"),
		t:       t,
	}
	if err := s.w.start(ctx); err != nil {
		s.client.Close()
		return err
	}
	return nil
}

func (s *asynqSystem) Enqueue(ctx context.Context, n int) error {
	p, err := json.Marshal(sleepPayload{N: n, Sleep: s.sc.Sleep})
	if err != nil {
		return err
	}
	_, err = s.client.EnqueueContext(ctx, asynq.NewTask("sleep", p))
	return err
}

func (s *asynqSystem) WaitAll(ctx context.Context) error {
	select {
	case <-s.t.AllDone():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *asynqSystem) Restart(ctx context.Context) (time.Time, time.Time, error) {
	return s.w.restart(ctx)
}

func (s *asynqSystem) StoreState(ctx context.Context) (int, string, error) {
	in := asynq.NewInspector(asynq.RedisClientOpt{Addr: s.addr})
	defer in.Close()
	q, err := in.GetQueueInfo("default")
	if err != nil {
		return 0, "", err
	}
	return q.Active + q.Pending + q.Scheduled + q.Retry,
		fmt.Sprintf("asynq's queue: %d active, %d pending, %d scheduled, %d retry, %d archived", q.Active, q.Pending, q.Scheduled, q.Retry, q.Archived), nil
}

func (s *asynqSystem) Stop() error {
	s.w.stop(10 * time.Second)
	return s.client.Close()
}

// asynqWorker is the worker process's asynq Server.
func asynqWorker(ctx context.Context, ev *events, addr string, workers int) error {
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: addr}, asynq.Config{
		Concurrency: workers,
		LogLevel:    asynq.WarnLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc("sleep", func(ctx context.Context, t *asynq.Task) error {
		var p sleepPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return err
		}
		return runJob(ctx, ev, p.N, p.Sleep)
	})
	if err := srv.Start(mux); err != nil {
		return err
	}
	ev.ready()
	<-ctx.Done()
	srv.Shutdown()
	return nil
}

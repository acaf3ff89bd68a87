package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/jobs/natsd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// crewJobsSystem is the crew jobs library (github.com/crew-go/crew/jobs)
// as a Go program uses it: its JetStream runner's Submit enqueues, and a
// worker process registers the kind and runs it on a crew pool of
// sc.Workers through the runner's Source. The store is a NATS server with
// JetStream, embedded in the benchmark's process (jobs/natsd) and served
// on a loopback port, as Redis and PostgreSQL are for the others; the kill
// test kills the worker process, and the server redelivers what it held
// after the ack wait.
type crewJobsSystem struct {
	tmp string

	sc     scenario
	t      *tracker
	srv    *natsd.Server
	nc     *nats.Conn
	runner *jsjobs.Runner
	w      *workerProc
}

// crewJobsAckWait is the consumer's ack wait: how soon the jobs a killed
// worker held run elsewhere. A long job is kept leased meanwhile.
const crewJobsAckWait = 5 * time.Second

// benchSleep is the benchmark's job: job N sleeps Sleep.
type benchSleep struct {
	N     int           `json:"n"`
	Sleep jobs.Duration `json:"sleep"`
}

func (benchSleep) Kind() string { return "sleep" }

func (s *crewJobsSystem) Name() string { return "crew-jobs" }

func (s *crewJobsSystem) Settings() string {
	return fmt.Sprintf("the jobs library's Go client and workers (jsjobs, a crew pool of workers), NATS JetStream embedded in the benchmark, ack wait %v; defaults otherwise", crewJobsAckWait)
}

// crewJobsConfig is the runner's settings, the same in the benchmark and
// in the worker process.
func crewJobsConfig(kinds *jobs.Kinds) jsjobs.Config {
	return jsjobs.Config{Kinds: kinds, AckWait: crewJobsAckWait, MaxTimeout: time.Hour}
}

func (s *crewJobsSystem) Start(ctx context.Context, sc scenario, t *tracker) error {
	dir, err := os.MkdirTemp(s.tmp, "nats-")
	if err != nil {
		return err
	}
	s.sc, s.t = sc, t
	if s.srv, err = natsd.Start(dir, "127.0.0.1:0", nil); err != nil {
		return err
	}
	if s.nc, err = nats.Connect(s.srv.ClientURL()); err != nil {
		return errors.Join(err, s.Stop())
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return errors.Join(err, s.Stop())
	}
	var kinds jobs.Kinds
	if err := jobs.Register(&kinds, func(context.Context, benchSleep) (any, error) { return nil, nil }); err != nil {
		return errors.Join(err, s.Stop())
	}
	if s.runner, err = jsjobs.New(ctx, js, crewJobsConfig(&kinds)); err != nil {
		return errors.Join(err, s.Stop())
	}
	s.w = &workerProc{
		args:    []string{"-system", "crew-jobs", "-addr", s.srv.ClientURL(), "-workers", strconv.Itoa(sc.Workers)},
		logPath: filepath.Join(s.tmp, "crew-jobs-"+sc.Name+".log"),
		t:       t,
	}
	if err := s.w.start(ctx); err != nil {
		return errors.Join(err, s.Stop())
	}
	return nil
}

func (s *crewJobsSystem) Enqueue(ctx context.Context, n int) error {
	spec, err := jobs.NewSpec(benchSleep{N: n, Sleep: jobs.Duration(s.sc.Sleep)})
	if err != nil {
		return err
	}
	_, err = s.runner.Submit(ctx, spec)
	return err
}

func (s *crewJobsSystem) WaitAll(ctx context.Context) error {
	select {
	case <-s.t.AllDone():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *crewJobsSystem) Restart(ctx context.Context) (time.Time, time.Time, error) {
	return s.w.restart(ctx)
}

func (s *crewJobsSystem) Stop() error {
	if s.w != nil {
		s.w.stop(10 * time.Second)
	}
	if s.runner != nil {
		_ = s.runner.Close()
	}
	if s.nc != nil {
		s.nc.Close()
	}
	if s.srv != nil {
		s.srv.Shutdown()
	}
	return nil
}

// crewJobsWorker is the worker process of crew-jobs: the kind registered,
// run on a crew pool of workers through the runner's Source, until ctx
// ends.
func crewJobsWorker(ctx context.Context, ev *events, url string, workers int) error {
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	var kinds jobs.Kinds
	if err := jobs.Register(&kinds, func(ctx context.Context, a benchSleep) (any, error) {
		return nil, runJob(ctx, ev, a.N, time.Duration(a.Sleep))
	}); err != nil {
		return err
	}
	runner, err := jsjobs.New(ctx, js, crewJobsConfig(&kinds))
	if err != nil {
		return err
	}
	defer runner.Close()
	pool, err := crew.New(crew.WithWorkers(workers))
	if err != nil {
		return err
	}
	source, err := runner.Source(pool)
	if err != nil {
		return err
	}
	ran := make(chan error, 1)
	go func() { ran <- source.Run(ctx) }()
	ev.ready()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = source.Shutdown(sctx)
	_ = pool.Shutdown(sctx, crew.Drain)
	return <-ran
}

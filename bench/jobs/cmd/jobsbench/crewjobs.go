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
	"github.com/crew-go/crew/natsjs"
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
//
// With queues > 0 ("crew-jobs-8q" for 8) the same workers are split over
// that many named queues: the worker process serves each with a
// QueueSource on a crew pool of its own (sc.Workers split evenly, see
// queuePools), and job n goes to queue n mod queues, so the producers
// submit round-robin over them. With shared, every queue's QueueSource is
// on one pool of sc.Workers ("crew-jobs-8q-shared"): each takes the room
// the others leave (natsjs's rule 1), as asynq's queues share one pool.
type crewJobsSystem struct {
	tmp    string
	queues int
	shared bool

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

func (s *crewJobsSystem) Name() string {
	if s.queues > 0 && s.shared {
		return fmt.Sprintf("crew-jobs-%dq-shared", s.queues)
	}
	if s.queues > 0 {
		return fmt.Sprintf("crew-jobs-%dq", s.queues)
	}
	return "crew-jobs"
}

func (s *crewJobsSystem) Settings() string {
	if s.queues > 0 && s.shared {
		return fmt.Sprintf("as crew-jobs-%dq, every queue's QueueSource on one crew pool of all the workers, each taking the room the others leave", s.queues)
	}
	if s.queues > 0 {
		return fmt.Sprintf("as crew-jobs, the workers split over %d named queues (a QueueSource on a crew pool of its own each, the workers ÷ %d; no limit set), "+
			"the jobs submitted round-robin over them (Spec.Queue)", s.queues, s.queues)
	}
	return fmt.Sprintf("the jobs library's Go client and workers (jsjobs, a crew pool of workers), NATS JetStream embedded in the benchmark, ack wait %v; defaults otherwise", crewJobsAckWait)
}

// queueName is the name of the benchmark's named queue i (0-based).
func queueName(i int) string { return "q" + strconv.Itoa(i+1) }

// queuePools splits workers over queues pools: each gets workers ÷ queues,
// the remainder one more each to the first, and every pool at least one.
func queuePools(workers, queues int) []int {
	pools := make([]int, queues)
	for i := range pools {
		pools[i] = workers / queues
		if i < workers%queues {
			pools[i]++
		}
		pools[i] = max(pools[i], 1)
	}
	return pools
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
		args:    []string{"-system", "crew-jobs", "-addr", s.srv.ClientURL(), "-workers", strconv.Itoa(sc.Workers), "-queues", strconv.Itoa(s.queues), "-shared=" + strconv.FormatBool(s.shared)},
		logPath: filepath.Join(s.tmp, s.Name()+"-"+sc.Name+".log"),
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
	if s.queues > 0 {
		spec.Queue = queueName(n % s.queues)
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
// ends. With queues > 0 it serves the named queues q1..q<queues> instead,
// each through its QueueSource on a pool of its own (queuePools).
func crewJobsWorker(ctx context.Context, ev *events, url string, workers, queues int, shared bool) error {
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
	// Each pool and its Source: one for the default queue, or one a named
	// queue.
	type served struct {
		pool   *crew.Pool
		source *natsjs.Source
	}
	var all []served
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, sv := range all {
			_ = sv.source.Shutdown(sctx)
			_ = sv.pool.Shutdown(sctx, crew.Drain)
		}
	}
	serve := func(q string, workers int) error {
		pool, err := crew.New(crew.WithWorkers(workers))
		if err != nil {
			return err
		}
		var source *natsjs.Source
		if q == "" {
			source, err = runner.Source(pool)
		} else {
			source, err = runner.QueueSource(ctx, q, pool)
		}
		if err != nil {
			_ = pool.Shutdown(context.Background(), crew.Drain)
			return err
		}
		all = append(all, served{pool, source})
		return nil
	}
	switch {
	case queues > 0 && shared:
		pool, err := crew.New(crew.WithWorkers(workers))
		if err != nil {
			return err
		}
		for i := range queues {
			source, err := runner.QueueSource(ctx, queueName(i), pool)
			if err != nil {
				stop()
				_ = pool.Shutdown(context.Background(), crew.Drain)
				return err
			}
			all = append(all, served{pool, source})
		}
	case queues > 0:
		for i, n := range queuePools(workers, queues) {
			if err := serve(queueName(i), n); err != nil {
				stop()
				return err
			}
		}
	default:
		if err := serve("", workers); err != nil {
			return err
		}
	}
	ran := make(chan error, len(all))
	for _, sv := range all {
		go func() { ran <- sv.source.Run(ctx) }()
	}
	ev.ready()
	<-ctx.Done()
	stop()
	var errs []error
	for range all {
		errs = append(errs, <-ran)
	}
	return errors.Join(errs...)
}

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// riverSystem is River on Postgres through riverpgxv5: an insert-only
// Client enqueues, a Client with one queue of sc.Workers MaxWorkers runs
// the jobs in a worker process. cooldown and poll are its FetchCooldown
// and FetchPollInterval; zero is River's default (100 ms and 1 s).
type riverSystem struct {
	name           string
	url            string // the server's, database postgres
	tmp            string
	cooldown, poll time.Duration

	sc     scenario
	dbURL  string
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	w      *workerProc
	t      *tracker
}

// databases numbers the databases made, one per scenario.
var databases atomic.Int64

type sleepArgs struct {
	N     int           `json:"n"`
	Sleep time.Duration `json:"sleep"`
}

func (sleepArgs) Kind() string { return "sleep" }

func (s *riverSystem) Name() string { return s.name }

func (s *riverSystem) Settings() string {
	if s.cooldown == 0 && s.poll == 0 {
		return "Postgres, riverpgxv5, Queues{default: MaxWorkers: workers}, defaults otherwise (FetchCooldown 100ms, FetchPollInterval 1s)"
	}
	return fmt.Sprintf("as default, with FetchCooldown %v, FetchPollInterval %v (River's own `river bench`)", s.cooldown, s.poll)
}

func (s *riverSystem) Start(ctx context.Context, sc scenario, t *tracker) error {
	dbURL, err := createDatabase(ctx, s.url, "river_"+strconv.FormatInt(databases.Add(1), 10))
	if err != nil {
		return err
	}
	s.sc, s.t, s.dbURL = sc, t, dbURL
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	// One connection per producer, so that inserts do not queue for
	// pgxpool's default of max(4, NumCPU) connections.
	cfg.MaxConns = int32(max(4, sc.Producers))
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	m, err := rivermigrate.New(riverpgxv5.New(s.pool), nil)
	if err != nil {
		s.pool.Close()
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		s.pool.Close()
		return fmt.Errorf("river migrate: %w", err)
	}
	s.client, err = river.NewClient(riverpgxv5.New(s.pool), &river.Config{Logger: quietLogger()})
	if err != nil {
		s.pool.Close()
		return err
	}
	args := []string{"-system", "river", "-addr", dbURL, "-workers", strconv.Itoa(sc.Workers)}
	if s.cooldown > 0 {
		args = append(args, "-fetch-cooldown", s.cooldown.String())
	}
	if s.poll > 0 {
		args = append(args, "-fetch-poll-interval", s.poll.String())
	}
	s.w = &workerProc{args: args, logPath: filepath.Join(s.tmp, s.name+"-"+sc.Name+".log"), t: t}
	if err := s.w.start(ctx); err != nil {
		s.pool.Close()
		return err
	}
	return nil
}

func (s *riverSystem) Enqueue(ctx context.Context, n int) error {
	_, err := s.client.Insert(ctx, sleepArgs{N: n, Sleep: s.sc.Sleep}, nil)
	return err
}

func (s *riverSystem) WaitAll(ctx context.Context) error {
	select {
	case <-s.t.AllDone():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *riverSystem) Restart(ctx context.Context) (time.Time, time.Time, error) {
	return s.w.restart(ctx)
}

// StoreState asks the scenario's database on a connection of its own, so
// that it answers after Stop too.
func (s *riverSystem) StoreState(ctx context.Context) (int, string, error) {
	c, err := pgx.Connect(ctx, s.dbURL)
	if err != nil {
		return 0, "", err
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, "SELECT state::text, count(*) FROM river_job GROUP BY state ORDER BY state")
	if err != nil {
		return 0, "", err
	}
	notEnded := 0
	states, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var state string
		var n int
		err := r.Scan(&state, &n)
		switch state {
		case "completed", "cancelled", "discarded":
		default:
			notEnded += n
		}
		return fmt.Sprintf("%d %s", n, state), err
	})
	if err != nil {
		return 0, "", err
	}
	return notEnded, "river_job: " + strings.Join(states, ", "), nil
}

func (s *riverSystem) Stop() error {
	s.w.stop(10 * time.Second)
	s.pool.Close()
	return nil
}

// riverWorker is the worker process's River Client.
func riverWorker(ctx context.Context, ev *events, url string, workers int, cooldown, poll time.Duration) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	ws := river.NewWorkers()
	river.AddWorker(ws, river.WorkFunc(func(ctx context.Context, job *river.Job[sleepArgs]) error {
		return runJob(ctx, ev, job.Args.N, job.Args.Sleep)
	}))
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     cooldown,
		FetchPollInterval: poll,
		Logger:            quietLogger(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
	})
	if err != nil {
		return err
	}
	// The client's own context is not ctx: cancelling the one given to
	// Start stops the client at once, and SIGTERM should stop it gracefully.
	if err := client.Start(context.Background()); err != nil {
		return err
	}
	ev.ready()
	<-ctx.Done()
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Stop(stop)
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

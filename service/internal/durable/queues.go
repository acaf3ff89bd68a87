package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
)

// Queue is a named job queue this crewd serves (-job-queues): Workers of
// its jobs at once here, on a pool of their own, at most Limit running
// and at most Rate started a Per across every crewd (0: none), set on the
// store at each start, so that every replica, started with the same
// flags, agrees.
type Queue struct {
	Name                 string
	Workers, Limit, Rate int
	Per                  time.Duration // of Rate; 0 is a second
}

// served is a named queue served here: its pool and its Source.
type served struct {
	name   string
	pool   *crew.Pool
	source *natsjs.Source
}

// serveQueues sets each named queue's limit and rate on the store and makes its
// pool and its Source.
func (d *Durable) serveQueues(ctx context.Context, log *slog.Logger) error {
	for _, q := range d.set.Queues {
		if err := d.runner.SetQueue(ctx, jobs.Queue{Name: q.Name, Limit: q.Limit, Rate: q.Rate, Per: jobs.Duration(q.Per)}); err != nil {
			return fmt.Errorf("job queue %s: %w", q.Name, err)
		}
		pool, err := crew.New(crew.WithWorkers(q.Workers), crew.WithLogger(log))
		if err != nil {
			return fmt.Errorf("job queue %s: %w", q.Name, err)
		}
		src, err := d.runner.QueueSource(ctx, q.Name, pool, natsjs.WithConn(d.nc), natsjs.WithLogger(log))
		if err != nil {
			_ = pool.Close()
			return fmt.Errorf("job queue %s: %w", q.Name, err)
		}
		d.queues = append(d.queues, &served{name: q.Name, pool: pool, source: src})
	}
	return nil
}

// runQueues starts pulling each named queue's jobs.
func (d *Durable) runQueues(log *slog.Logger) {
	for _, q := range d.queues {
		go func() {
			if err := q.source.Run(context.Background()); err != nil {
				log.Error("a job queue's source stopped", "queue", q.name, "error", err)
			}
		}()
	}
}

// stopQueues stops each named queue as StopPulling stops the default one,
// and its pool with the stop's mode, all at once.
func (d *Durable) stopQueues(ctx context.Context) error {
	errs := make(chan error, 2*len(d.queues))
	for _, q := range d.queues {
		go func() { errs <- q.pool.Shutdown(ctx, d.set.ShutdownMode) }()
		go func() { errs <- q.source.Shutdown(ctx) }()
	}
	var all []error
	for range 2 * len(d.queues) {
		if err := <-errs; err != nil && !errors.Is(err, crew.ErrClosed) {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}

// closeQueues closes the pools of the named queues, whatever stopped them.
func (d *Durable) closeQueues() {
	for _, q := range d.queues {
		_ = q.pool.Close()
	}
}

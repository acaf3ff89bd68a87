// Package durable is crewd's durable job path: the embedded NATS server
// (or a shared one), the connection and its handlers, the jobs library's
// JetStream runner with crewd's kinds, the Source that runs the jobs on
// the pool, the store's health for /readyz and /healthz, its metrics, and
// the order of its close.
package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/jobs/natsd"
	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natsprom"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Settings say where the jobs go: which NATS servers, or the embedded
// one, and the stream, consumer and bucket (Config).
type Settings struct {
	URL   string // the NATS servers (comma-separated); "" for an embedded server
	Creds string // a credentials file for URL's servers; "" for none
	// User and PasswordFile, if set, authenticate to URL's servers; the
	// file is read at every connect, so a rotated password is taken at
	// the next reconnect.
	User, PasswordFile string
	// CA, if set, is the PEM file of the authority URL's servers' TLS
	// certificates are checked against.
	CA string
	// InOrder connects to URL's servers in the order given, not at random.
	InOrder bool
	DataDir string // the embedded server's JetStream store
	Listen  string // where the embedded server also serves clients; "" for in-process only
	jsjobs.Config

	Queues       []Queue           // the named queues served here besides the default one
	ShutdownMode crew.ShutdownMode // how the named queues' pools stop, as the main pool does
	// Partitions spreads the jobs over that many streams and buckets
	// (jsjobs.Partitioned); 0 or 1 is one (jsjobs.Runner).
	Partitions int
}

// store is the JetStream job store crewd runs: one partition
// (*jsjobs.Runner) or several (*jsjobs.Partitioned).
type store interface {
	jobs.Runner
	Source(pool *crew.Pool, opts ...natsjs.Option) (*natsjs.Source, error)
	QueueSource(ctx context.Context, q string, pool *crew.Pool, opts ...natsjs.Option) (*natsjs.Source, error)
	SetQueue(ctx context.Context, q jobs.Queue) error
	WatchStore(ctx context.Context)
	StoreDown() (time.Time, error)
	Collector() prometheus.Collector
	Outcomes() jsjobs.Outcomes
	Close() error
}

// newStore makes or finds the store of that many partitions (one: a
// Runner); a nil store with the error.
func newStore(ctx context.Context, js jetstream.JetStream, cfg jsjobs.Config, partitions int) (store, error) {
	if partitions > 1 {
		p, err := jsjobs.NewPartitioned(ctx, js, cfg, partitions)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	r, err := jsjobs.New(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ErrDataDir wraps a failure of the embedded server to use its data
// directory: a configuration error, unlike a server that cannot be
// reached.
var ErrDataDir = errors.New("embedded NATS server")

// Durable is the JetStream path of the jobs: the embedded server (none
// with a URL), the connection, the Runner that accepts and records jobs,
// and the Source that runs them on the pool.
type Durable struct {
	set    Settings
	server *natsd.Server
	nc     *nats.Conn
	runner store
	source *natsjs.Source
	queues []*served // the named queues served here (queues.go)
	log    *slog.Logger
	ran    chan struct{} // closed at Source.Run's end, with runErr
	runErr error

	// closing is set by close, before crewd closes the connection itself:
	// any other close is the server's (an -ERR), and for good.
	closing atomic.Bool

	stopWatch func()        // ends the store's probes
	watched   chan struct{} // closed when they have ended

	lag    uint64 // jobs left in the stream at the stop
	lagErr error
	closed bool
}

// pingInterval and maxPingsOut detect a shared NATS server that stopped
// answering (cut off the network) in about pingInterval*(maxPingsOut+1).
const (
	pingInterval = 2 * time.Second
	maxPingsOut  = 2
)

// setupTimeout bounds the connection and the stream, consumer and bucket
// lookups at start, tried again while a JetStream cluster forms.
const setupTimeout = 30 * time.Second

// Start starts the embedded server when the URL is empty, connects, finds
// or creates the stream, consumer and bucket, and makes the Source; Run
// starts it. A data directory that cannot be used is an ErrDataDir (crewd
// exits 2: a configuration error); a NATS server that cannot be reached or
// refuses the setup is another error (crewd exits 1, so that Kubernetes
// restarts the pod with backoff).
func Start(set Settings, log *slog.Logger, pool *crew.Pool) (*Durable, error) {
	d := &Durable{ran: make(chan struct{}), set: set, log: log}
	opts := []nats.Option{nats.Name("crewd"),
		// nats.go does not reconnect after the server closed the connection
		// with an error (a protocol violation, a control line over 4 KB):
		// the connection is closed for good, and so are the jobs here.
		// /healthz fails from then on (the pod is restarted), and the job
		// source stops, which stops crewd with exit code 1.
		nats.ClosedHandler(func(nc *nats.Conn) {
			if d.closing.Load() {
				log.Info("NATS connection closed")
				return
			}
			log.Error("NATS connection closed for good by the server; crewd stops, /healthz fails meanwhile", "error", nc.LastError())
		})}
	var err error
	if set.URL == "" {
		d.server, err = natsd.Start(set.DataDir, set.Listen, log)
		if err != nil {
			return nil, fmt.Errorf("-data-dir %s: %w: %w", set.DataDir, ErrDataDir, err)
		}
		d.nc, err = d.server.Connect(opts...)
	} else {
		opts = append(opts, nats.Timeout(5*time.Second), nats.MaxReconnects(-1),
			// The servers may not answer yet: in Kubernetes crewd's pods
			// start with the NATS servers of the same install, whose
			// Service has no endpoint until one is Ready. Connecting is
			// tried again in the background, and the setup below waits
			// for it within setupTimeout, instead of crewd exiting at once
			// to be restarted with the kubelet's backoff.
			nats.RetryOnFailedConnect(true),
			// A server cut off the network sends nothing, not even a
			// close: without an answer to two pings 2 s apart the
			// connection counts as lost (within about 6 s) and is made
			// again to another server of the list; /readyz fails meanwhile.
			nats.PingInterval(pingInterval), nats.MaxPingsOutstanding(maxPingsOut),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				if err == nil {
					// A close, crewd's own or the server's: the closed
					// handler tells which.
					return
				}
				log.Warn("NATS disconnected: jobs are refused (503) until it is back", "error", err)
			}),
			nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "server", nc.ConnectedUrlRedacted()) }))
		if set.Creds != "" {
			opts = append(opts, nats.UserCredentials(set.Creds))
		}
		if set.User != "" {
			user, file := set.User, set.PasswordFile
			opts = append(opts, nats.UserInfoHandler(func() (string, string) {
				password, err := readPassword(file)
				if err != nil {
					log.Error("NATS password: the connection will be refused", "file", file, "error", err)
				}
				return user, password
			}))
		}
		if set.CA != "" {
			opts = append(opts, nats.RootCAs(set.CA))
		}
		if set.InOrder {
			opts = append(opts, nats.DontRandomize())
		}
		d.nc, err = nats.Connect(set.URL, opts...)
	}
	if err != nil {
		d.Close(log)
		return nil, fmt.Errorf("-nats-url %q: %w", set.URL, err)
	}
	fail := func(err error) (*Durable, error) {
		d.Close(log)
		return nil, err
	}
	js, err := jetstream.New(d.nc)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	cfg := set.Config
	cfg.Log = log
	if cfg.Namespace == "" {
		cfg.Namespace = "crewd" // its dashboards, alerts and their tests read crewd_job_*
	}
	if d.server != nil && cfg.Journal == "" {
		// What this process held when it was last killed runs again as
		// it starts, rather than after the ack wait (natsjs.WithJournal).
		cfg.Journal = filepath.Join(set.DataDir, "held")
	}
	runner, err := newStore(ctx, js, cfg, set.Partitions)
	if err != nil {
		if !d.nc.IsConnected() {
			return fail(fmt.Errorf("-nats-url %q: no server reached in %v: %w", set.URL, setupTimeout, err))
		}
		return fail(fmt.Errorf("jobs on JetStream: %w", err))
	}
	d.runner = runner
	d.source, err = d.runner.Source(pool, natsjs.WithConn(d.nc), natsjs.WithLogger(log))
	if err != nil {
		return fail(err)
	}
	if err := d.serveQueues(ctx, log); err != nil {
		return fail(err)
	}
	return d, nil
}

// Jobs accepts jobs and answers for their records.
func (d *Durable) Jobs() jobs.Runner { return d.runner }

// Source runs the jobs on the pool.
func (d *Durable) Source() *natsjs.Source { return d.source }

// StopPulling stops the Sources: no more pulls, every job not started
// handed back; the running ones end as the pool's stop decides (the
// named queues' pools stop here, with the same mode).
func (d *Durable) StopPulling(ctx context.Context) error {
	queues := make(chan error, 1)
	go func() { queues <- d.stopQueues(ctx) }()
	return errors.Join(d.source.Shutdown(ctx), <-queues)
}

// StartedArgs is where the embedded server serves clients, if it does.
func (d *Durable) StartedArgs() []any {
	if d.server == nil || d.server.ClientURL() == "" {
		return nil
	}
	return []any{"nats", d.server.ClientURL()}
}

// Run starts pulling jobs, and probing the store for Ready.
func (d *Durable) Run() {
	d.runQueues(d.log)
	go func() {
		d.runErr = d.source.Run(context.Background())
		close(d.ran)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	d.stopWatch, d.watched = cancel, make(chan struct{})
	go func() {
		defer close(d.watched)
		var wg sync.WaitGroup
		wg.Go(func() { d.runner.WatchStore(ctx) })
		if b, ok := d.runner.(interface{ Balance(context.Context) }); ok {
			wg.Go(func() { b.Balance(ctx) }) // the partitions' leaders kept spread
		}
		wg.Wait()
	}()
}

// Ended is closed when the Source stops: only when told to, or when its
// connection is closed for good. RunErr then says why.
func (d *Durable) Ended() <-chan struct{} { return d.ran }

// RunErr is Source.Run's error, once Ended is closed.
func (d *Durable) RunErr() error {
	<-d.ran
	return d.runErr
}

// Ready says why jobs cannot be taken now, for /readyz: the connection is
// down, or the store has not been reachable through it for storeGrace (a
// server cut off from the others and not yet left, JetStream down), so
// that the Service sends requests to replicas that can reach the store. A
// shorter outage is a stream electing its leader, which every replica sees
// at once: failing them all would only turn 503s into refused connections.
func (d *Durable) Ready() error {
	if st := d.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("NATS connection %v", st)
	}
	if since, err := d.runner.StoreDown(); err != nil && time.Since(since) >= storeGrace {
		return fmt.Errorf("job store unavailable for %v: %w", time.Since(since).Round(time.Second), err)
	}
	return nil
}

// Collectors are the durable path's metrics: the runner's (the store's
// availability, the jobs handed back for an outage, the runs' times) and
// the Source's.
func (d *Durable) Collectors() []prometheus.Collector {
	source, err := natsprom.NewCollector(d.source)
	if err != nil {
		panic(err) // no options: cannot fail
	}
	return []prometheus.Collector{d.runner.Collector(), source}
}

// storeGrace is how long the store may be out before /readyz fails: more
// than a stream's leader election (JetStream waits 4 to 9 s).
const storeGrace = 10 * time.Second

// Live says why the process is of no more use, for /healthz: its NATS
// connection was closed for good (not by crewd's own stop).
func (d *Durable) Live() error {
	if d.nc.IsClosed() && !d.closing.Load() {
		return fmt.Errorf("NATS connection closed for good: %v", d.nc.LastError())
	}
	return nil
}

// Where says where the jobs go, for the start-up lines.
func (d *Durable) Where() string {
	set := d.set
	if d.server == nil {
		return "NATS " + d.nc.ConnectedUrlRedacted()
	}
	s := "the embedded NATS server (store in " + set.DataDir
	if u := d.server.ClientURL(); u != "" {
		s += ", clients on " + u
	}
	return s + ")"
}

// Close ends what the stop sequence leaves once the Source and the pool
// have stopped: the connection (flushed, so that the last acks reach the
// server), then the embedded server. It reads the consumer's lag before,
// for Summary: jobs left in the stream for the next crewd.
func (d *Durable) Close(log *slog.Logger) {
	if d.closed {
		return
	}
	d.closed = true
	lag, lagErr := uint64(0), errors.New("no source")
	if d.stopWatch != nil {
		d.stopWatch()
		<-d.watched
	}
	if d.source != nil {
		select {
		case <-d.ran:
			if d.runErr != nil {
				log.Warn("shutdown: the job source ended with an error", "error", d.runErr)
			}
		case <-time.After(time.Second):
			log.Warn("shutdown: the job source is still running; closing its connection")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		lag, lagErr = d.source.Lag(ctx)
		cancel()
	}
	d.closeQueues()
	if d.runner != nil {
		_ = d.runner.Close() // its index's tails and its cancels' subscription
	}
	if d.nc != nil {
		d.closing.Store(true)
		_ = d.nc.FlushTimeout(time.Second)
		d.nc.Close()
	}
	if d.server != nil {
		d.server.Shutdown()
	}
	d.lag, d.lagErr = lag, lagErr
}

// Summary is the durable path's part of the summary line: what this
// process's runs ended in, the jobs left in the stream, and the Source's
// counts.
func (d *Durable) Summary() []any {
	o := d.runner.Outcomes()
	s := d.source.Stats()
	args := []any{
		"jobs_succeeded", o.Succeeded, "jobs_failed", o.Failed, "jobs_timed_out", o.TimedOut,
		"jobs_retried", o.Retried, "jobs_snoozed", o.Snoozed, "jobs_canceled", o.Canceled,
		"jobs_requeued", o.Requeued, "jobs_skipped", o.Skipped, "jobs_ended_late", o.LateEnds,
		"periodic_ticks", o.Ticks, "periodic_ticks_skipped", o.TicksSkipped,
	}
	if d.lagErr == nil {
		args = append(args, "jobs_pending", d.lag)
	} else {
		args = append(args, "jobs_pending_error", d.lagErr.Error())
	}
	return append(args, slog.Group("source",
		"received", s.Received, "redelivered", s.Redelivered, "acked", s.Acked, "naked", s.Naked,
		"termed", s.Termed, "dead_lettered", s.DeadLettered, "handed_back", s.HandedBack,
		"heartbeats", s.Heartbeats, "leases_lost", s.LeasesLost, "in_flight", s.InFlight))
}

// readPassword reads a password file: its first line.
func readPassword(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line), nil
}

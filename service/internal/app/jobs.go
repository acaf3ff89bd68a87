package app

import (
	"context"
	"log/slog"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/jobs/memjobs"
	"github.com/crew-go/crew/service/internal/config"
	"github.com/crew-go/crew/service/internal/durable"
	"github.com/crew-go/crew/service/internal/kinds"
	"github.com/prometheus/client_golang/prometheus"
)

// jobService is where crewd's jobs go, through JetStream (durable.Durable,
// the default) or in memory: run wires either the same way, and the stop
// sequence calls StopPulling with the pool's stop and Close after it.
type jobService interface {
	Jobs() jobs.Runner                  // what the API submits to and reads
	Where() string                      // for the start lines
	Collectors() []prometheus.Collector // its metrics
	StartedArgs() []any                 // for the started line
	Run()                               // starts pulling jobs
	Ended() <-chan struct{}             // closed if jobs can no longer run here; nil: never
	RunErr() error                      // why, once Ended is closed
	Ready() error                       // for /readyz
	Live() error                        // for /healthz
	StopPulling(ctx context.Context) error
	Close(log *slog.Logger)
	Summary() []any // for the summary line
}

// startJobs starts the job service cfg asks for, its kinds crewd's.
func startJobs(cfg config.Config, log *slog.Logger, pool *crew.Pool) (jobService, error) {
	if cfg.Durable() {
		queues := make([]durable.Queue, 0, len(cfg.JobQueues))
		for _, q := range cfg.JobQueues {
			queues = append(queues, durable.Queue{Name: q.Name, Workers: q.Workers, Limit: q.Limit, Rate: q.Rate, Per: q.Per})
		}
		return durable.Start(durable.Settings{
			URL: cfg.NATSURL, Creds: cfg.NATSCreds, DataDir: cfg.DataDir, Listen: cfg.NATSListen,
			User: cfg.NATSUser, PasswordFile: cfg.NATSPasswordFile, CA: cfg.NATSCA, InOrder: cfg.NATSInOrder,
			Config: jsjobsConfig(cfg), Queues: queues, ShutdownMode: cfg.ShutdownMode, Partitions: cfg.JobPartitions,
		}, log, pool)
	}
	return newMemory(cfg, log, pool), nil
}

// memory is the job service of -nats-url=off: the jobs on the pool, their
// records in memory, lost with the process.
type memory struct {
	runner  *memjobs.Runner
	evicted *prometheus.CounterVec
}

func newMemory(cfg config.Config, log *slog.Logger, pool *crew.Pool) *memory {
	m := &memory{evicted: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crewd_job_records_evicted_total", Help: "Job records evicted from memory, by reason (age, count).",
	}, []string{"reason"})}
	store := memjobs.NewStore(cfg.Records(), cfg.JobRecordTTL, log, func(reason string, n int) {
		m.evicted.WithLabelValues(reason).Add(float64(n))
	})
	m.runner = &memjobs.Runner{Pool: pool, Store: store, Kinds: kinds.New(), DefaultTimeout: cfg.JobTimeout, MaxTimeout: cfg.MaxJobTimeout}
	return m
}

func (m *memory) Jobs() jobs.Runner                     { return m.runner }
func (m *memory) Where() string                         { return "memory (lost with the process: -nats-url=off)" }
func (m *memory) Collectors() []prometheus.Collector    { return []prometheus.Collector{m.evicted} }
func (m *memory) StartedArgs() []any                    { return nil }
func (m *memory) Run()                                  {}
func (m *memory) Ended() <-chan struct{}                { return nil }
func (m *memory) RunErr() error                         { return nil }
func (m *memory) Ready() error                          { return nil }
func (m *memory) Live() error                           { return nil }
func (m *memory) StopPulling(ctx context.Context) error { return nil }
func (m *memory) Close(*slog.Logger)                    {}

// Summary is every record's state: the pool's stop has run or dropped
// every job.
func (m *memory) Summary() []any {
	counts := m.runner.Store.Counts()
	var args []any
	for _, st := range []jobs.State{jobs.Queued, jobs.Running, jobs.Succeeded, jobs.Failed, jobs.TimedOut, jobs.Canceled, jobs.NotRun} {
		args = append(args, "jobs_"+string(st), counts[st])
	}
	return args
}

// jsjobsConfig is the JetStream runner's settings of cfg.
func jsjobsConfig(cfg config.Config) jsjobs.Config {
	return jsjobs.Config{
		Stream: cfg.NATSStream, Consumer: cfg.NATSConsumer, Bucket: cfg.NATSBucket,
		Replicas: cfg.NATSReplicas, SucceededTTL: cfg.JobRecordTTL, FailedTTL: cfg.JobFailedTTL, StoreBytes: cfg.JobStoreBytes,
		AckWait: cfg.NATSAckWait, MaxAttempts: cfg.JobMaxAttempts,
		Kinds: kinds.New(), DefaultTimeout: cfg.JobTimeout, MaxTimeout: cfg.MaxJobTimeout,
		Journal: cfg.Journal, // "" with the embedded server: durable sets <data-dir>/held
	}
}

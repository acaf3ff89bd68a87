package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
)

// Config is everything crewd can be told. Every field has a flag and a
// CREW_ variable named after it (-shutdown-delay, CREW_SHUTDOWN_DELAY).
type Config struct {
	HTTPAddr  string // the API and the probes
	AdminAddr string // /metrics, and /debug/pprof/ with PProf

	APITokens      string // the token file the API asks its callers' tokens of; "" for none
	InsecureNoAuth bool   // serve the API to every caller on any address, without tokens
	PProf          bool   // serve /debug/pprof/ on the admin listener
	TraceURL       string // the trace UI's address of a trace, {trace_id} in it, for the web UI's links; "" for none

	Workers     int           // the pool's bound
	Queue       int           // the pool's queue
	IdleTimeout time.Duration // a worker idle this long exits

	MaxNumbers     int           // numbers in one factorial request
	MaxBody        int64         // bytes in one request body
	RequestTimeout time.Duration // an online request's whole time
	JobTimeout     time.Duration // a job's timeout unless it asks for less
	MaxJobTimeout  time.Duration // the most a job may ask for
	JobRecords     int           // job records kept at most in memory; 0: MemoryJobRecords
	JobRecordTTL   time.Duration // a succeeded (in memory: any finished) job's record is kept this long
	JobFailedTTL   time.Duration // through JetStream, a failed or timed-out job's record is kept this long
	JobStoreBytes  int64         // through JetStream, the records' bucket's bound in bytes
	RetryAfter     time.Duration // the Retry-After of a 503 for a full queue

	ShutdownDelay   time.Duration     // readiness off before the listener closes
	ShutdownTimeout time.Duration     // the whole stop, from SIGTERM to exit
	ShutdownMode    crew.ShutdownMode // what the pool does with its work

	LogLevel string // debug, info, warn, error

	NATSURL          string        // "" for the embedded server, "off" for jobs in memory, else the servers to dial
	DataDir          string        // the embedded server's JetStream store
	NATSListen       string        // the embedded server's TCP address; "" for none (in-process only)
	NATSStream       string        // the jobs' stream; its subjects are <stream>.>
	NATSConsumer     string        // the durable pull consumer every crewd shares
	NATSBucket       string        // the key-value bucket of job records
	NATSAckWait      time.Duration // a job delivered and neither acked nor kept alive is redelivered after this
	NATSReplicas     int           // replicas of the stream and the bucket when crewd creates them
	JobPartitions    int           // streams and buckets the jobs spread over (jsjobs.Partitioned); 1 is one
	NATSCreds        string        // a credentials file (JWT and NKey seed) for a shared NATS; "" for none
	NATSUser         string        // a user of a shared NATS, with NATSPasswordFile; "" for none
	NATSPasswordFile string        // the file of NATSUser's password
	NATSCA           string        // the CA file a shared NATS's TLS certificates are checked against; "" for the system's
	NATSInOrder      bool          // connect to NATSURL's servers in the order given, not at random
	Journal          string        // the file of the jobs this crewd holds, for a restart to run them at once; "" for <data-dir>/held with the embedded server, none otherwise
	JobMaxAttempts   int           // runs of one durable job, retries included, unless the job asks for another bound
	JobQueues        []JobQueue    // the named job queues this crewd serves besides the default one
}

// JobQueue is a named job queue a crewd serves (-job-queues): Workers of
// its jobs at once in this crewd, on a pool of their own, at most Limit
// running across every crewd (0: none), and at most Rate started a Per
// across every crewd (0: none; Per 0 is a second).
type JobQueue struct {
	Name                 string
	Workers, Limit, Rate int
	Per                  time.Duration
}

// NATSOff is the -nats-url that keeps jobs in memory, without NATS.
const NATSOff = "off"

// Embedded reports whether crewd runs its own NATS server.
func (c Config) Embedded() bool { return c.NATSURL == "" }

// Durable reports whether jobs go through JetStream.
func (c Config) Durable() bool { return c.NATSURL != NATSOff }

// Default is the configuration with nothing set: a pool as wide as
// GOMAXPROCS (which follows the container's CPU quota), a stop that fits in
// Kubernetes' default 30 s grace period.
func Default() Config {
	return Config{
		HTTPAddr:        LoopbackAddr, // AllAddr with -api-tokens or -insecure-no-auth
		AdminAddr:       ":9090",
		Workers:         runtime.GOMAXPROCS(0),
		Queue:           crew.DefaultQueueSize,
		IdleTimeout:     crew.DefaultIdleTimeout,
		MaxNumbers:      4096,
		MaxBody:         1 << 20,
		RequestTimeout:  10 * time.Second,
		JobTimeout:      30 * time.Second,
		MaxJobTimeout:   5 * time.Minute,
		JobRecords:      0, // MemoryJobRecords
		JobRecordTTL:    time.Hour,
		JobFailedTTL:    24 * time.Hour,
		JobStoreBytes:   64 << 20,
		RetryAfter:      time.Second,
		ShutdownDelay:   5 * time.Second,
		ShutdownTimeout: 25 * time.Second,
		ShutdownMode:    crew.DrainThenHard,
		LogLevel:        "info",
		DataDir:         "crewd-data",
		NATSStream:      "jobs",
		NATSConsumer:    "crewd",
		NATSBucket:      "jobs",
		NATSAckWait:     30 * time.Second,
		NATSReplicas:    1,
		JobPartitions:   1,
		JobMaxAttempts:  25,
	}
}

// ErrHelp is returned by Parse for -h and -help, after the usage is written.
var ErrHelp = flag.ErrHelp

// Parse reads the configuration: defaults, then CREW_* variables from
// getenv, then flags from args. The error says which setting is wrong and
// why; the caller exits with status 2.
func Parse(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := Default()
	fs := flag.NewFlagSet("crewd", flag.ContinueOnError)
	fs.SetOutput(usage)
	var mode string
	str := func(p *string, name, help string) { fs.StringVar(p, name, *p, help+env(name)) }
	num := func(p *int, name, help string) { fs.IntVar(p, name, *p, help+env(name)) }
	dur := func(p *time.Duration, name, help string) { fs.DurationVar(p, name, *p, help+env(name)) }
	str(&c.HTTPAddr, "http-addr", "address of the API and the probes (/healthz, /readyz); without -api-tokens, a loopback address only (default "+LoopbackAddr+"; "+AllAddr+" with -api-tokens or -insecure-no-auth)")
	str(&c.AdminAddr, "admin-addr", "address of /metrics (and /debug/pprof/ with -pprof)")
	str(&c.APITokens, "api-tokens", "the API's token file: a line a token, \"name sha256:<hex> scopes\" (crewd token new -h), read again when it changes; every /v1/ route then asks for a bearer token with its scope")
	fs.BoolVar(&c.InsecureNoAuth, "insecure-no-auth", false, "serve the API without tokens on any address: anyone who reaches it may submit, read and cancel every job"+env("insecure-no-auth"))
	fs.BoolVar(&c.NATSInOrder, "nats-in-order", false, "connect to the servers of -nats-url in the order given, the first first, rather than to one picked at random: each replica given its own first server, the replicas are spread evenly over the servers (a few replicas picked at random often share one)"+env("nats-in-order"))
	fs.BoolVar(&c.PProf, "pprof", false, "serve /debug/pprof/ on the admin listener (-admin-addr)"+env("pprof"))
	fs.Var((*workers)(&c.Workers), "workers", "the pool's bound: task functions running at once, or \"quota\": the container's CPU quota rounded down, at least 1, for CPU-bound tasks under a quota below 1 CPU (default GOMAXPROCS, which follows the CPU quota rounded up, at least 2)"+env("workers"))
	num(&c.Queue, "queue", "tasks that may wait for a worker; a full queue answers 503 with Retry-After")
	dur(&c.IdleTimeout, "idle-timeout", "an idle worker exits after this")
	num(&c.MaxNumbers, "max-numbers", "numbers in one POST /v1/factorial")
	var maxBody = int(c.MaxBody)
	num(&maxBody, "max-body", "bytes in one request body; more answers 413")
	dur(&c.RequestTimeout, "request-timeout", "the whole time of an online request")
	dur(&c.JobTimeout, "job-timeout", "a job's timeout unless it asks for one")
	dur(&c.MaxJobTimeout, "max-job-timeout", "the longest timeout a job may ask for (a sleep job runs at most its timeout)")
	num(&c.JobRecords, "job-records", "in memory (-nats-url=off), job records kept at most (0: 10000), the oldest finished evicted first; a new job is refused (503) only while unfinished ones fill it")
	dur(&c.JobRecordTTL, "job-record-ttl", "a succeeded job's record is kept this long after its end (in memory: any finished job's); a job waiting or running keeps its record")
	dur(&c.JobFailedTTL, "job-failed-record-ttl", "through JetStream, a failed or timed-out job's record (and an idempotency key) is kept this long after its end")
	var storeBytes = int(c.JobStoreBytes)
	num(&storeBytes, "job-store-bytes", "through JetStream, the bound of the job records' bucket in bytes, when crewd creates it; when full, the oldest records (finished ones) go first")
	dur(&c.RetryAfter, "retry-after", "Retry-After of a 503 answered for a full queue")
	dur(&c.ShutdownDelay, "shutdown-delay", "on SIGTERM, readiness fails this long before the listener closes, so that endpoints drop the pod")
	dur(&c.ShutdownTimeout, "shutdown-timeout", "the whole stop, from SIGTERM to exit, the delay included; keep it under the pod's terminationGracePeriodSeconds")
	mode = c.ShutdownMode.String()
	str(&mode, "shutdown-mode", "what the pool does with its work on SIGTERM: drain-then-hard, drain, soft, soft-then-hard, hard")
	str(&c.LogLevel, "log-level", "debug, info, warn or error")
	str(&c.NATSURL, "nats-url", "NATS servers for the jobs' JetStream stream (nats://host:4222, comma-separated); empty: an embedded server with its store in -data-dir; \"off\": jobs in memory, lost with the process")
	str(&c.DataDir, "data-dir", "the embedded NATS server's JetStream store (with an empty -nats-url)")
	str(&c.NATSListen, "nats-listen", "host:port where the embedded server also serves NATS clients (the nats CLI, another crewd); a loopback address unless -insecure-no-auth (it asks its clients for no credentials); empty: in-process only")
	str(&c.NATSStream, "nats-stream", "the jobs' stream, subjects <stream>.>; created if missing")
	str(&c.NATSConsumer, "nats-consumer", "the durable pull consumer the crewd replicas share; created if missing")
	str(&c.NATSBucket, "nats-bucket", "the key-value bucket of job records; created if missing, with -job-store-bytes")
	dur(&c.NATSAckWait, "nats-ack-wait", "a job delivered to a crewd that stops answering for it (killed) is redelivered after this")
	str(&c.NATSCreds, "nats-creds", "a NATS credentials file (user JWT and NKey seed) to authenticate to the servers of -nats-url")
	str(&c.NATSUser, "nats-user", "a user to authenticate to the servers of -nats-url, with -nats-password-file")
	str(&c.NATSPasswordFile, "nats-password-file", "the file of -nats-user's password (its first line), read at every connect: a rotated password is taken at the next reconnect")
	str(&c.Journal, "journal", "a file where crewd notes the jobs it holds, so that a crewd started again on it (its container restarted in its pod, the file on an emptyDir) runs a killed one's jobs at once rather than after -nats-ack-wait; default <data-dir>/held with the embedded server, none with -nats-url")
	str(&c.TraceURL, "trace-url", "the address of a trace in your trace UI, with {trace_id} where the trace's id goes (\"https://jaeger.example/trace/{trace_id}\"): the web UI links each job to its trace; empty: the trace id is shown")
	str(&c.NATSCA, "nats-ca", "a PEM file of the authority the servers' TLS certificates are checked against (-nats-url tls://...); empty: the system's")
	num(&c.JobPartitions, "job-partitions", "through JetStream, the streams and buckets the jobs spread over (1 to 256), each its own raft group, so that a server cut off stalls only the partitions it leads and a submit goes to another within 500 ms; partition 0 is the stream and bucket named above (a store of one partition upgraded keeps its jobs there), partition k adds -k to their names; never lower it while jobs wait in the partitions past it")
	num(&c.NATSReplicas, "nats-replicas", "replicas (1 to 5) of the stream and the bucket when crewd creates them, on a JetStream cluster of that many servers at least; existing ones are used as they are (a warning says when they have fewer)")
	fs.Var((*jobQueues)(&c.JobQueues), "job-queues", "through JetStream, the named job queues this crewd serves besides the default one, each with its own workers, at most a limit of its jobs running at once across every crewd, and at most a rate of them started a period (a second unless given) across every crewd: name=workers[/limit][@rate[/period]],... (\"email=4,partner=2/3@20,report=1@100/1m\"); a job names its queue in POST /v1/jobs (\"queue\")"+env("job-queues"))
	num(&c.JobMaxAttempts, "job-max-attempts", "through JetStream, the runs of one job, its retries after a failure or a timeout (with exponential backoff) and its reruns after a crash included, unless the job's \"max_attempts\" says otherwise (1 to 1000)")

	// Environment first, so that flags given on the command line win.
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(envName(f.Name)); v != "" && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %v", envName(f.Name), v, cleanFlagErr(err))
			}
		}
	})
	if envErr != nil {
		return c, envErr
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	addrSet := getenv(envName("http-addr")) != ""
	fs.Visit(func(f *flag.Flag) { addrSet = addrSet || f.Name == "http-addr" })
	if !addrSet && (c.APITokens != "" || c.InsecureNoAuth) {
		c.HTTPAddr = AllAddr // every interface, once callers are asked for tokens (or told not to be)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.MaxBody = int64(maxBody)
	c.JobStoreBytes = int64(storeBytes)
	m, err := ParseMode(mode)
	if err != nil {
		return c, err
	}
	c.ShutdownMode = m
	return c, c.Validate()
}

func env(name string) string { return " (" + envName(name) + ")" }

// workers is -workers: a number, or "quota" for crew.CPUBound(): the
// container's CPU quota rounded down, at least 1 (GOMAXPROCS rounds it up
// and is at least 2, so a pod limited to 500m runs CPU-bound tasks four
// times as wide as its quota; measured in service/README.md).
type workers int

func (w *workers) String() string { return strconv.Itoa(int(*w)) }

func (w *workers) Set(s string) error {
	if s == "quota" {
		*w = workers(crew.CPUBound())
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q: want a number or \"quota\"", s)
	}
	*w = workers(n)
	return nil
}

// jobQueues is -job-queues: name=workers[/limit], comma-separated.
type jobQueues []JobQueue

func (q *jobQueues) String() string {
	var parts []string
	for _, jq := range *q {
		s := fmt.Sprintf("%s=%d", jq.Name, jq.Workers)
		if jq.Limit > 0 {
			s += fmt.Sprintf("/%d", jq.Limit)
		}
		if jq.Rate > 0 {
			s += fmt.Sprintf("@%d", jq.Rate)
			if jq.Per > 0 {
				s += "/" + jq.Per.String()
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

func (q *jobQueues) Set(s string) error {
	var out []JobQueue
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, bounds, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("%.80q: want name=workers[/limit][@rate[/per]]", part)
		}
		bounds, rate, hasRate := strings.Cut(bounds, "@")
		workers, limit, _ := strings.Cut(bounds, "/")
		jq := JobQueue{Name: name}
		var err error
		if jq.Workers, err = strconv.Atoi(workers); err != nil {
			return fmt.Errorf("%.80q: workers %.20q: not a number", part, workers)
		}
		if limit != "" {
			if jq.Limit, err = strconv.Atoi(limit); err != nil {
				return fmt.Errorf("%.80q: limit %.20q: not a number", part, limit)
			}
		}
		if hasRate {
			n, per, hasPer := strings.Cut(rate, "/")
			if jq.Rate, err = strconv.Atoi(n); err != nil {
				return fmt.Errorf("%.80q: rate %.20q: not a number", part, n)
			}
			if hasPer {
				if jq.Per, err = time.ParseDuration(per); err != nil {
					return fmt.Errorf("%.80q: rate's period %.20q: not a duration (1s, 1m)", part, per)
				}
			}
		}
		out = append(out, jq)
	}
	*q = out
	return nil
}

// envName is the variable of a flag: -shutdown-delay is CREW_SHUTDOWN_DELAY.
func envName(flagName string) string {
	return "CREW_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func cleanFlagErr(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return fmt.Errorf("not a number")
	}
	return err
}

// ParseMode reads a shutdown mode by its name.
func ParseMode(s string) (crew.ShutdownMode, error) {
	for m := crew.DrainThenHard; m <= crew.Hard; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("shutdown mode %q: want drain-then-hard, drain, soft, soft-then-hard or hard", s)
}

// The API's address when -http-addr is not given: this machine only
// (LoopbackAddr), or every interface (AllAddr) with -api-tokens or
// -insecure-no-auth.
const (
	LoopbackAddr = "127.0.0.1:8080"
	AllAddr      = ":8080"
)

// Validate reports the first setting out of range.
func (c Config) Validate() error {
	switch {
	case c.HTTPAddr == "":
		return errors.New("-http-addr: empty")
	case c.APITokens != "" && c.InsecureNoAuth:
		return errors.New("-insecure-no-auth with -api-tokens: choose one")
	case c.APITokens == "" && !c.InsecureNoAuth && !Loopback(c.HTTPAddr):
		return fmt.Errorf("-http-addr %s without -api-tokens: anyone who reaches it could submit, read and cancel every job. "+
			"Make a token file (crewd token new -name me -scopes jobs:read,jobs:submit,jobs:admin -file tokens) and pass -api-tokens tokens, "+
			"serve this machine only (-http-addr %s), or pass -insecure-no-auth to serve everyone", c.HTTPAddr, LoopbackAddr)
	case c.AdminAddr == "":
		return errors.New("-admin-addr: empty")
	case c.Workers < 1:
		return fmt.Errorf("-workers %d: want at least 1", c.Workers)
	case c.Queue < 1 || c.Queue > crew.MaxQueueSize:
		return fmt.Errorf("-queue %d: want 1 to %d", c.Queue, crew.MaxQueueSize)
	case c.IdleTimeout <= 0:
		return fmt.Errorf("-idle-timeout %v: want more than 0", c.IdleTimeout)
	case c.MaxNumbers < 1:
		return fmt.Errorf("-max-numbers %d: want at least 1", c.MaxNumbers)
	case c.MaxBody < 64:
		return fmt.Errorf("-max-body %d: want at least 64", c.MaxBody)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("-request-timeout %v: want more than 0", c.RequestTimeout)
	case c.JobTimeout <= 0 || c.MaxJobTimeout < c.JobTimeout:
		return fmt.Errorf("-job-timeout %v, -max-job-timeout %v: want 0 < job timeout <= max", c.JobTimeout, c.MaxJobTimeout)
	case c.JobRecords < 0:
		return fmt.Errorf("-job-records %d: want 0 (the default) or more", c.JobRecords)
	case c.JobRecordTTL < time.Second:
		return fmt.Errorf("-job-record-ttl %v: want 1s or more", c.JobRecordTTL)
	case c.JobFailedTTL < time.Second:
		return fmt.Errorf("-job-failed-record-ttl %v: want 1s or more", c.JobFailedTTL)
	case c.JobStoreBytes < 1<<20:
		return fmt.Errorf("-job-store-bytes %d: want 1048576 (1 MiB) or more", c.JobStoreBytes)
	case c.RetryAfter < time.Second:
		return fmt.Errorf("-retry-after %v: want at least 1s (the header counts seconds)", c.RetryAfter)
	case c.ShutdownDelay < 0:
		return fmt.Errorf("-shutdown-delay %v: want 0 or more", c.ShutdownDelay)
	case c.ShutdownTimeout <= c.ShutdownDelay:
		return fmt.Errorf("-shutdown-timeout %v: want more than -shutdown-delay %v", c.ShutdownTimeout, c.ShutdownDelay)
	case c.JobPartitions < 1 || c.JobPartitions > 256:
		return fmt.Errorf("-job-partitions %d: want 1 to 256", c.JobPartitions)
	case c.JobPartitions > 1 && !c.Durable():
		return fmt.Errorf("-job-partitions %d: jobs in memory have no partitions (they need -nats-url or the embedded server)", c.JobPartitions)
	}
	if err := validTraceURL(c.TraceURL); err != nil {
		return fmt.Errorf("-trace-url %.120q: %v", c.TraceURL, err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("-log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	if !c.Durable() {
		return c.validJobQueues()
	}
	if err := validURLs(c.NATSURL); err != nil {
		return fmt.Errorf("-nats-url %q: %v", c.NATSURL, err)
	}
	switch {
	case c.Embedded() && c.DataDir == "":
		return errors.New("-data-dir: empty; the embedded NATS server needs a directory (or set -nats-url)")
	case !c.Embedded() && c.NATSListen != "":
		return errors.New("-nats-listen is for the embedded server: unset it, or -nats-url")
	case !validName(c.NATSStream):
		return fmt.Errorf("-nats-stream %q: want letters, digits, - and _", c.NATSStream)
	case !validName(c.NATSConsumer):
		return fmt.Errorf("-nats-consumer %q: want letters, digits, - and _", c.NATSConsumer)
	case !validName(c.NATSBucket):
		return fmt.Errorf("-nats-bucket %q: want letters, digits, - and _", c.NATSBucket)
	case c.NATSAckWait < time.Second:
		return fmt.Errorf("-nats-ack-wait %v: want at least 1s", c.NATSAckWait)
	case c.NATSReplicas < 1 || c.NATSReplicas > 5:
		return fmt.Errorf("-nats-replicas %d: want 1 to 5", c.NATSReplicas)
	case c.NATSCreds != "" && (c.Embedded() || !c.Durable()):
		return fmt.Errorf("-nats-creds %s: for the servers of -nats-url; the embedded server needs none", c.NATSCreds)
	case (c.NATSUser != "" || c.NATSPasswordFile != "" || c.NATSCA != "" || c.NATSInOrder) && c.Embedded():
		return errors.New("-nats-user, -nats-password-file, -nats-ca and -nats-in-order are for the servers of -nats-url; the embedded server needs none")
	case c.Journal != "" && c.Embedded():
		return errors.New("-journal: with the embedded server crewd keeps its journal in -data-dir (held); -journal is for -nats-url")
	case (c.NATSUser == "") != (c.NATSPasswordFile == ""):
		return errors.New("-nats-user and -nats-password-file: give both, or neither")
	case c.NATSUser != "" && c.NATSCreds != "":
		return errors.New("-nats-user with -nats-creds: authenticate one way")
	case c.Embedded() && c.NATSReplicas != 1:
		return fmt.Errorf("-nats-replicas %d: the embedded server is one server: want 1, or set -nats-url to a JetStream cluster", c.NATSReplicas)
	case c.JobMaxAttempts < 1 || c.JobMaxAttempts > 1000:
		return fmt.Errorf("-job-max-attempts %d: want 1 to 1000", c.JobMaxAttempts)
	}
	if err := c.validJobQueues(); err != nil {
		return err
	}
	if c.NATSListen != "" {
		if _, port, err := net.SplitHostPort(c.NATSListen); err != nil {
			return fmt.Errorf("-nats-listen %q: %v", c.NATSListen, err)
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("-nats-listen %q: bad port", c.NATSListen)
		}
		if !Loopback(c.NATSListen) && !c.InsecureNoAuth {
			// The embedded server asks its clients for nothing: on another
			// address anyone who reaches it could purge the jobs' stream.
			return fmt.Errorf("-nats-listen %s: the embedded NATS server asks its clients for no credentials; serve this machine only (127.0.0.1:4222), run a NATS with users for other hosts (-nats-url, -nats-creds), or pass -insecure-no-auth", c.NATSListen)
		}
	}
	return nil
}

// validJobQueues checks -job-queues: names that are queues' and not the
// default one, each once; workers from 1 to 10,000; a limit of 0 (none)
// or more; and a JetStream store to keep them.
func (c Config) validJobQueues() error {
	seen := map[string]bool{}
	for _, q := range c.JobQueues {
		switch {
		case !c.Durable():
			return errors.New("-job-queues: named queues need the JetStream store (-nats-url is off)")
		case jobs.CheckQueue(q.Name) != nil:
			return fmt.Errorf("-job-queues %q: want 1 to %d letters, digits, '-' or '_'", q.Name, jobs.MaxQueueName)
		case q.Name == jobs.DefaultQueue:
			return fmt.Errorf("-job-queues %s: the default queue runs on the pool of -workers", q.Name)
		case seen[q.Name]:
			return fmt.Errorf("-job-queues %s: named twice", q.Name)
		case q.Workers < 1 || q.Workers > 10_000:
			return fmt.Errorf("-job-queues %s: workers %d: want 1 to 10000", q.Name, q.Workers)
		case q.Limit < 0 || q.Limit > jobs.MaxQueueLimit:
			return fmt.Errorf("-job-queues %s: limit %d: want 1 to %d (none: leave it out)", q.Name, q.Limit, jobs.MaxQueueLimit)
		}
		var inv *jobs.InvalidError
		if err := (jobs.Queue{Name: q.Name, Rate: q.Rate, Per: jobs.Duration(q.Per)}).Validate(); errors.As(err, &inv) {
			return fmt.Errorf("-job-queues %s: %s", q.Name, inv.Reason)
		}
		seen[q.Name] = true
	}
	return nil
}

// validTraceURL checks -trace-url: "", or an http(s) address with
// {trace_id} in it.
func validTraceURL(t string) error {
	if t == "" {
		return nil
	}
	u, err := url.Parse(strings.ReplaceAll(t, "{trace_id}", "0"))
	switch {
	case err != nil:
		return err
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return errors.New("want an http or https address")
	case !strings.Contains(t, "{trace_id}"):
		return errors.New("want {trace_id} where the trace's id goes")
	}
	return nil
}

// validURLs checks a comma-separated list of NATS server URLs; "" is none.
func validURLs(list string) error {
	if list == "" {
		return nil
	}
	for raw := range strings.SplitSeq(list, ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			return err
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Errorf("scheme %q: want nats://, tls://, ws:// or wss:// (or \"off\")", u.Scheme)
		}
		if u.Host == "" {
			return errors.New("no host")
		}
	}
	return nil
}

// validName is a name JetStream takes for a stream, a consumer or a
// bucket alike.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// MemoryJobRecords is the job records kept in memory by default: every
// new job looks at every record, so few.
const MemoryJobRecords = 10000

// Records is -job-records, or its default.
func (c Config) Records() int {
	if c.JobRecords > 0 {
		return c.JobRecords
	}
	return MemoryJobRecords
}

// Loopback reports whether addr (host:port) serves this machine only: a
// loopback IP or localhost; an empty host is every interface.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

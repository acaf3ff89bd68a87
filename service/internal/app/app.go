package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/prom"
	"github.com/crew-go/crew/service/internal/api"
	"github.com/crew-go/crew/service/internal/auth"
	"github.com/crew-go/crew/service/internal/config"
	"github.com/crew-go/crew/service/internal/durable"
	"github.com/crew-go/crew/service/internal/tracing"
	"github.com/crew-go/crew/service/internal/ui"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1 // a listener failed while serving
	ExitConfig = 2 // bad configuration, or a port that cannot be bound
)

// Main runs crewd with args and the environment read by getenv until a
// signal on stop ends it, and returns the process's exit code. Logs go to
// logOut as JSON lines; usage and configuration errors to errOut, and
// when errOut is a terminal, the lines for a person.
func Main(args []string, getenv func(string) string, stop <-chan os.Signal, logOut, errOut io.Writer) int {
	cfg, err := config.Parse(args, getenv, errOut)
	if errors.Is(err, config.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(errOut, "crewd: %v\n", err)
		return ExitConfig
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: level})))
	var tokens *auth.File
	if cfg.APITokens != "" {
		if tokens, err = auth.Open(cfg.APITokens, log); err != nil {
			fmt.Fprintf(errOut, "crewd: -api-tokens: %v\n", err)
			return ExitConfig
		}
	}

	httpLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		fmt.Fprintf(errOut, "crewd: -http-addr %s: %v%s\n", cfg.HTTPAddr, err, inUse(err, cfg.HTTPAddr))
		return ExitConfig
	}
	adminLn, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		httpLn.Close()
		fmt.Fprintf(errOut, "crewd: -admin-addr %s: %v%s\n", cfg.AdminAddr, err, inUse(err, cfg.AdminAddr))
		return ExitConfig
	}
	// Traces, when the OTEL_* variables ask for them (see package tracing).
	stopTracing, err := tracing.Setup(context.Background(), getenv, log)
	if err != nil {
		httpLn.Close()
		adminLn.Close()
		fmt.Fprintf(errOut, "crewd: tracing (OTEL_* variables): %v\n", err)
		return ExitConfig
	}
	// The lines for a person (where to reach crewd, how to stop it, why
	// the stop takes a moment) go to a terminal only: in a container they
	// would land in the JSON log stream, which says the same in its way.
	human := io.Discard
	if terminal(errOut) {
		human = errOut
	}
	code := run(cfg, log, tokens, httpLn, adminLn, stop, errOut, human)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stopTracing(ctx); err != nil {
		log.Warn("tracing: the last spans were not all exported", "error", err)
	}
	return code
}

// terminal reports whether w is a terminal (a character device), where
// crewd's lines for a person go; a variable, so that a test can say yes.
var terminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// reachable is addr as a client on this machine dials it.
func reachable(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsUnspecified() {
		_, port, _ := net.SplitHostPort(addr.String())
		return "localhost:" + port
	}
	return tcp.String()
}

func run(cfg config.Config, log *slog.Logger, tokens *auth.File, httpLn, adminLn net.Listener, stop <-chan os.Signal, errOut, human io.Writer) int {
	gcPercent := tuneGC(os.Getenv)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	tasks, err := prom.NewTaskMetrics()
	if err != nil {
		panic(err) // no options: cannot fail
	}
	pool, err := crew.New(
		crew.WithName("crewd"),
		crew.WithWorkers(cfg.Workers),
		crew.WithQueueSize(cfg.Queue),
		crew.WithIdleTimeout(cfg.IdleTimeout),
		crew.WithObserver(tasks.Observe),
		crew.WithLogger(log),
	)
	if err != nil {
		panic(err) // validated by config
	}
	collector, err := prom.NewCollector(pool, prom.WithTaskMetrics(tasks))
	if err != nil {
		panic(err)
	}
	reg.MustRegister(collector)
	a := &api.API{
		Pool:       pool,
		MaxNumbers: cfg.MaxNumbers, MaxBody: cfg.MaxBody, RequestTimeout: cfg.RequestTimeout, RetryAfter: cfg.RetryAfter,
		Log: log, Metrics: api.NewMetrics(reg), Auth: tokens, LocalOnly: tokens == nil && !cfg.InsecureNoAuth,
	}
	// The jobs: through JetStream (the default), or in memory.
	js, err := startJobs(cfg, log, pool)
	if err != nil {
		fmt.Fprintf(errOut, "crewd: %v\n", err)
		_ = pool.Close()
		httpLn.Close()
		adminLn.Close()
		if errors.Is(err, durable.ErrDataDir) {
			return ExitConfig
		}
		return ExitFailed
	}
	a.Jobs, a.Ready, a.Live = js.Jobs(), js.Ready, js.Live
	web := &ui.UI{Jobs: js.Jobs(), Auth: tokens, LocalOnly: a.LocalOnly, Log: log, Ready: js.Ready, TraceURL: cfg.TraceURL}
	a.UI = web.Handler()
	reg.MustRegister(js.Collectors()...)
	if lister, ok := js.Jobs().(jobs.Lister); ok {
		reg.MustRegister(api.NewJobCounts(lister, api.CountTimeout))
	}
	where := js.Where()
	fmt.Fprintf(human, "crewd (pid %[4]d): API on http://%[1]s, metrics on http://%[2]s/metrics, jobs in %[3]s; try\n"+
		"  curl -X POST %[1]s/v1/factorial -H 'Content-Type: application/json' -d '{\"numbers\":[1,2,3]}'\n"+
		"  curl -X POST %[1]s/v1/jobs -H 'Content-Type: application/json' -d '{\"kind\":\"sleep\",\"duration\":\"2s\"}'\n"+
		"  curl %[1]s/v1/jobs/ID        (ID: the \"id\" the POST answered)\n"+
		"or open http://%[1]s/ui/ in a browser.\n"+
		"Stop it with Ctrl-C, or kill %[4]d (with go run, crewd's pid, not go's).\n",
		reachable(httpLn.Addr()), reachable(adminLn.Addr()), where, os.Getpid())
	fmt.Fprintln(human, access(cfg, tokens))

	// Headers within ReadHeaderTimeout, bodies within the request timeout
	// (the API sets the read deadline). Headers over
	// api.MaxHeaderBytes are refused by the API with a JSON 431; net/http
	// refuses, in plain text, only those past MaxHeaderBytes (its default,
	// 1 MB).
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: http.DefaultMaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	// At the stop the gate closes the listener and lets every connection
	// it accepted be answered before Shutdown; then a client stalled
	// mid-body does not hold the drain.
	g := newGate(srv, httpLn)
	srv.RegisterOnShutdown(a.CutBodies)
	admin := &http.Server{Handler: adminMux(reg, cfg.PProf), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 2)
	go func() { served <- srv.Serve(g.listener()) }()
	go func() { served <- admin.Serve(adminLn) }()
	started := []any{"http", "http://" + httpLn.Addr().String(), "admin", "http://" + adminLn.Addr().String(),
		"workers", cfg.Workers, "gomaxprocs", runtime.GOMAXPROCS(0), "cpu_quota", quota(), "gc_percent", gcPercent, "tracing", tracing.Enabled(os.Getenv), "queue", cfg.Queue, "shutdown_mode", cfg.ShutdownMode.String(),
		"shutdown_delay", cfg.ShutdownDelay.String(), "shutdown_timeout", cfg.ShutdownTimeout.String(), "jobs", where, "api_access", access(cfg, tokens), "pprof", cfg.PProf}
	js.Run()
	// The overview's backlog line, sampled until crewd stops.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { web.Watch(watchCtx); close(watched) }()
	defer func() { stopWatch(); <-watched }()
	started = append(started, js.StartedArgs()...)
	log.Info("crewd started", started...)

	code := ExitOK
	var sig os.Signal
	// The delay lets load balancers drop this pod while it still answers:
	// after a signal, and after the job source ended on its own (the API
	// still serves online work, and /healthz says why it fails). Not after
	// the listener failed: nothing is answered any more.
	delay := cfg.ShutdownDelay
	select {
	case sig = <-stop:
	case err := <-served:
		log.Error("listener failed", "error", err)
		code = ExitFailed
		delay = 0
	case <-js.Ended():
		// The Source stops only when told to, or when its connection is
		// closed for good: the jobs cannot run here any more.
		log.Error("job source stopped", "error", js.RunErr())
		code = ExitFailed
	}
	if sig != nil {
		fmt.Fprintf(human, "crewd: %v: readiness off, %v for load balancers to drop this process, then the drain (at most %v in all; a second signal stops hard)\n",
			sig, cfg.ShutdownDelay, cfg.ShutdownTimeout)
	}
	stopped := shutdown(cfg, log, sig, delay, stop, a, srv, g, admin, pool, js)
	summary(log, pool, js, stopped, code)
	return code
}

// shutdown runs the stop sequence a pod needs, within cfg.ShutdownTimeout
// from the signal: readiness off at once; the delay, so that endpoints
// drop the pod while requests are still served; then, together, the API
// listener closed (the gate: every connection accepted answered or found
// silent) with in-flight requests finished (http.Server.Shutdown),
// the job source stopped (no more pulls, every job not started handed back
// to the stream) and the pool stopped in its mode. Together, because an
// online request in flight waits on the pool: in a drain mode it finishes,
// in a soft or hard one its queued tasks are dropped and it answers 503 at
// once, rather than hold the listener's drain until the queue has run. The
// NATS connection and the embedded server go after the source and the pool,
// whose last acks and hand-backs they carry; the admin listener closes
// last, so that /metrics answers throughout. A second signal cuts it short:
// the pool stops hard at once (running jobs handed back) and the rest
// closes.
func shutdown(cfg config.Config, log *slog.Logger, sig os.Signal, delay time.Duration, stop <-chan os.Signal, a *api.API, srv *http.Server, g *gate, admin *http.Server, pool *crew.Pool, js jobService) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	a.SetStopping()
	log.Info("shutdown: readiness off", "signal", fmt.Sprint(sig), "delay", delay.String(), "deadline", cfg.ShutdownTimeout.String())
	hard := make(chan struct{})
	hardStopped := make(chan error, 1)
	go func() {
		select {
		case s := <-stop:
			log.Warn("shutdown: second signal, stopping hard", "signal", fmt.Sprint(s))
			close(hard)
			hctx, hcancel := context.WithTimeout(context.Background(), time.Second)
			defer hcancel()
			hardStopped <- pool.Shutdown(hctx, crew.Hard)
			cancel()
		case <-ctx.Done():
			hardStopped <- nil
		}
	}()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-hard:
			t.Stop()
		}
	}
	log.Info("shutdown: closing the API listener, stopping the job source and the pool", "mode", cfg.ShutdownMode.String(),
		"left", time.Until(deadlineOf(ctx)).Round(time.Millisecond).String())
	stopped := make(chan error, 1)
	go func() { stopped <- pool.Shutdown(ctx, cfg.ShutdownMode) }()
	// Stop pulling, hand back every job not started; the running ones end
	// as the pool's mode decides, and are acked or handed back.
	sourceStopped := make(chan error, 1)
	go func() { sourceStopped <- js.StopPulling(ctx) }()
	// The listener closes, every connection it accepted is answered or
	// found silent, and only then does Shutdown begin: net/http leaves a
	// request it reads after that unanswered.
	g.close(ctx, time.After(silentGrace)) // the grace runs from the close
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown: requests still open at the deadline, closing them", "error", err)
		srv.Close()
	}
	err := <-stopped
	if serr := <-sourceStopped; serr != nil {
		select {
		case <-hard: // cut short on purpose: the hard stop handed the jobs back
		default:
			log.Warn("shutdown: the job source did not settle every job by the deadline; the server redelivers them after the ack wait", "error", serr)
		}
	}
	cancel()
	if herr := <-hardStopped; herr != nil {
		err = herr
	}
	if errors.Is(err, crew.ErrStuck) {
		log.Warn("shutdown: task functions ignore cancellation", "error", err)
	}
	// The connection and the embedded server outlive the Source and the
	// pool, whose last acks they carry.
	js.Close(log)
	actx, acancel := context.WithTimeout(context.Background(), time.Second)
	defer acancel()
	_ = admin.Shutdown(actx)
	log.Info("shutdown: done", "took", time.Since(start).Round(time.Millisecond).String())
	return err
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// summary is the one line that says what the stop did: the pool's counts,
// and in memory every job record's state; through JetStream what this
// process's runs ended in, the jobs left in the stream and the Source's
// counts.
func summary(log *slog.Logger, pool *crew.Pool, js jobService, err error, code int) {
	args := append([]any{"exit_code", code, "pool", pool.Stats()}, js.Summary()...)
	if err != nil {
		args = append(args, "error", err.Error())
	}
	log.Info("crewd stopped", args...)
}

// quota is the container's CPU quota for the started line, or "none".
func quota() string {
	if cpus, ok := crew.CPUQuota(); ok {
		return strconv.FormatFloat(cpus, 'f', -1, 64)
	}
	return "none"
}

// adminMux serves /metrics, and /debug/pprof/ when pprofOn (-pprof): a
// profile shows what the process holds and runs, and a 30 s CPU profile
// costs the pod, so it is served only when asked for, and never on the
// API's port.
func adminMux(reg *prometheus.Registry, pprofOn bool) *http.ServeMux {
	mux := http.NewServeMux()
	// OpenMetrics on request (Prometheus asks for it when exemplar storage
	// is on): the request histogram's exemplars carry trace ids.
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true}))
	if pprofOn {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("/", api.NotFound())
	return mux
}

// access says who may call the API, for the started line and a person.
func access(cfg config.Config, tokens *auth.File) string {
	switch {
	case tokens != nil:
		return fmt.Sprintf("bearer tokens of %s (%d now), a scope a route", tokens.Path(), tokens.Tokens().Len())
	case cfg.InsecureNoAuth:
		return "everyone, without tokens (-insecure-no-auth)"
	}
	return "this machine only, without tokens (no -api-tokens)"
}

// Command jobsbench measures job systems side by side in one run on one
// machine: asynq on Redis, River on Postgres (at its defaults and as its
// own benchmark tunes it), and crewd through its HTTP API. It starts the
// stores itself, from Debian's redis-server and postgresql packages, on
// loopback ports with their data in a temporary directory, builds crewd
// from this repository, and writes a markdown table.
//
//	go run ./cmd/jobsbench              # 20,000 jobs of 1 ms and the kill test; writes RESULTS.md
//	go run ./cmd/jobsbench -quick       # 2,000 jobs, no kill test; writes to a temporary file
//
// `jobsbench worker ...` is the worker process of asynq and River (see
// worker.go): the benchmark starts it, kills it and starts it again.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/crew-go/crew/jobs"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := workerMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "jobsbench worker:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobsbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "jobsbench:", err)
		os.Exit(1)
	}
}

// options is the command line.
type options struct {
	Quick      bool
	Jobs       int
	Sleep      time.Duration
	Producers  int
	Workers    int
	Rounds     int
	Kill       bool
	Workflow   int // steps of the dependencies' measurement (0: none)
	KillJobs   int
	KillSleep  time.Duration
	KillAfter  time.Duration
	KillBound  time.Duration
	RiverBound time.Duration
	Only       []string
	Out        string
	Repo       string
	Crewd      string
}

func parseFlags(args []string, usage io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("jobsbench", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.BoolVar(&o.Quick, "quick", false, "a smoke run: 2,000 jobs, no kill test (unless -kill), written to a temporary file (unless -out)")
	fs.IntVar(&o.Jobs, "jobs", 20000, "jobs in the throughput test")
	fs.DurationVar(&o.Sleep, "sleep", time.Millisecond, "each job's sleep in the throughput test")
	fs.IntVar(&o.Producers, "producers", 16, "goroutines enqueuing at once")
	fs.IntVar(&o.Workers, "workers", 32, "jobs each system runs at once")
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds of the throughput test, the systems in turn in each (1 with -quick)")
	fs.BoolVar(&o.Kill, "kill", true, "run the kill test")
	fs.IntVar(&o.Workflow, "workflow", 1000, "steps of crew-jobs' fan-out/fan-in, against the same jobs plain (0: not run; at least 3)")
	fs.IntVar(&o.KillJobs, "kill-jobs", 2000, "jobs in the kill test")
	fs.DurationVar(&o.KillSleep, "kill-sleep", 200*time.Millisecond, "each job's sleep in the kill test")
	fs.DurationVar(&o.KillAfter, "kill-after", 1500*time.Millisecond, "the workers are SIGKILLed this long after the first enqueue")
	fs.DurationVar(&o.KillBound, "kill-bound", 180*time.Second, "after the restart, a job not ended within this is lost")
	fs.DurationVar(&o.RiverBound, "river-bound", 60*time.Second, "the same for River, whose stuck jobs wait for RescueStuckJobsAfter (1 h)")
	only := fs.String("only", "", "systems to run, comma-separated (asynq, river, river-tuned, crewd, crew-jobs, crew-jobs-8q, crew-jobs-8q-shared); empty: all")
	fs.StringVar(&o.Out, "out", "", "the markdown file to write (default RESULTS.md, or a temporary file with -quick)")
	fs.StringVar(&o.Repo, "repo", "", "the repository's root, to build crewd from (default: found from the working directory)")
	fs.StringVar(&o.Crewd, "crewd", "", "a crewd binary to use rather than building one")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.Quick {
		if !set["jobs"] {
			o.Jobs = 2000
		}
		if !set["kill"] {
			o.Kill = false
		}
		if !set["rounds"] {
			o.Rounds = 1
		}
	}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
		for _, name := range o.Only {
			if !slices.Contains(systemNames, name) {
				return o, fmt.Errorf("-only %s: want some of %s", name, strings.Join(systemNames, ", "))
			}
		}
	}
	switch {
	case o.Rounds < 1:
		return o, errors.New("-rounds: want at least 1")
	case o.Jobs < 1 || o.KillJobs < 1:
		return o, errors.New("-jobs and -kill-jobs: want at least 1")
	case o.Producers < 1 || o.Workers < 1:
		return o, errors.New("-producers and -workers: want at least 1")
	case o.Sleep <= 0 || o.KillSleep <= 0:
		return o, errors.New("-sleep and -kill-sleep: want more than 0")
	case o.Workflow != 0 && (o.Workflow < 3 || o.Workflow > jobs.MaxSteps):
		return o, fmt.Errorf("-workflow: want 0, or 3 to %d (a root, the steps, a join: a workflow's bound)", jobs.MaxSteps)
	}
	return o, nil
}

// systemNames are the systems, in the order of the tables.
var systemNames = []string{"asynq", "river", "river-tuned", "crewd", "crew-jobs", "crew-jobs-8q", "crew-jobs-8q-shared"}

// newSystems makes the systems asked for, on the stores started.
func newSystems(o options, tmp, redisAddr, pgURL, crewd string) []system {
	all := []system{
		&asynqSystem{addr: redisAddr, tmp: tmp},
		&riverSystem{name: "river", url: pgURL, tmp: tmp},
		// River's own benchmark (`river bench`, cmd/river/riverbench) sets
		// these: the client's default FetchCooldown "limits throughput".
		&riverSystem{name: "river-tuned", url: pgURL, tmp: tmp, cooldown: 2 * time.Millisecond, poll: 20 * time.Millisecond},
		&crewdSystem{bin: crewd, tmp: tmp},
		&crewJobsSystem{tmp: tmp},
		// The same workers split over 8 named queues, the jobs round-robin
		// over them: what serving queues costs against one queue.
		&crewJobsSystem{tmp: tmp, queues: 8},
		// The same 8 queues on one pool of all the workers.
		&crewJobsSystem{tmp: tmp, queues: 8, shared: true},
	}
	var out []system
	for _, s := range all {
		if len(o.Only) == 0 || slices.Contains(o.Only, s.Name()) {
			out = append(out, s)
		}
	}
	return out
}

func (o options) wants(name string) bool { return len(o.Only) == 0 || slices.Contains(o.Only, name) }

func run(ctx context.Context, o options, stdout io.Writer) error {
	tmp, err := os.MkdirTemp("", "jobsbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	out := o.Out
	if out == "" {
		out = "RESULTS.md"
		if o.Quick {
			// Not in tmp, which goes at the end: the file is the run's output.
			f, err := os.CreateTemp("", "jobsbench-*.md")
			if err != nil {
				return err
			}
			f.Close()
			out = f.Name()
		}
	}

	var redisAddr, pgURL, crewd string
	if o.wants("asynq") {
		s, addr, err := startRedis(ctx, tmp)
		if err != nil {
			return err
		}
		defer s.stop()
		redisAddr = addr
		fmt.Fprintf(stdout, "redis-server on %s\n", addr)
	}
	if o.wants("river") || o.wants("river-tuned") {
		s, url, err := startPostgres(ctx, tmp)
		if err != nil {
			return err
		}
		defer s.stop()
		pgURL = url
		fmt.Fprintf(stdout, "postgres on %s\n", strings.TrimPrefix(url, "postgres://"))
	}
	if o.wants("crewd") {
		crewd = o.Crewd
		if crewd == "" {
			if crewd, err = buildCrewd(ctx, o.Repo, tmp); err != nil {
				return err
			}
		}
	}
	systems := newSystems(o, tmp, redisAddr, pgURL, crewd)

	rep := report{
		Date:     time.Now().UTC(),
		CPUs:     runtime.NumCPU(),
		Go:       runtime.Version(),
		Versions: moduleVersions(),
		Command:  "go run ./cmd/jobsbench " + strings.Join(os.Args[1:], " "),
		Options:  o,
		Postgres: postgresVersion(ctx),
		Redis:    redisVersion(ctx),
		Load:     [2]string{loadAverage()},
	}
	tp := scenario{Name: "throughput", Jobs: o.Jobs, Sleep: o.Sleep, Producers: o.Producers, Workers: o.Workers}
	for round := range o.Rounds {
		fmt.Fprintf(stdout, "== throughput, round %d of %d: %d jobs of %v, %d producers, %d workers\n", round+1, o.Rounds, tp.Jobs, tp.Sleep, tp.Producers, tp.Workers)
		for _, s := range systems {
			r := throughput(ctx, s, tp, max(5*time.Minute, o.KillBound))
			fmt.Fprintf(stdout, "  %-12s %s\n", s.Name(), r.line())
			rep.Throughput = append(rep.Throughput, r)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if o.Workflow > 0 && o.wants("crew-jobs") {
		ws := scenario{Name: "workflow", Jobs: o.Workflow, Sleep: o.Sleep, Producers: o.Producers, Workers: o.Workers}
		fmt.Fprintf(stdout, "== dependencies: a fan-out/fan-in of %d steps of %v against the same jobs plain, %d workers\n", ws.Jobs, ws.Sleep, ws.Workers)
		for range o.Rounds {
			r := workflowRound(ctx, tmp, ws, max(5*time.Minute, o.KillBound))
			fmt.Fprintf(stdout, "  crew-jobs    %s\n", r.line())
			rep.Workflow = append(rep.Workflow, r)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if o.Kill {
		ks := scenario{Name: "kill", Jobs: o.KillJobs, Sleep: o.KillSleep, Producers: o.Producers, Workers: o.Workers}
		fmt.Fprintf(stdout, "== kill: %d jobs of %v, %d workers, SIGKILLed %v after the first enqueue and started again\n", ks.Jobs, ks.Sleep, ks.Workers, o.KillAfter)
		for _, s := range systems {
			bound := o.KillBound
			if strings.HasPrefix(s.Name(), "river") {
				bound = o.RiverBound
			}
			_, crewdLike := s.(*crewdSystem)
			r := kill(ctx, s, ks, o.KillAfter, bound, !crewdLike, stdout)
			fmt.Fprintf(stdout, "  %-12s %s\n", s.Name(), r.line())
			rep.Kill = append(rep.Kill, r)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	rep.Load[1] = loadAverage()
	md := rep.markdown()
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, md)
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwritten to %s\n", out)
	return rep.err()
}

// buildCrewd builds service/cmd/crewd of the repository at repo (found
// from the working directory when empty) into dir.
func buildCrewd(ctx context.Context, repo, dir string) (string, error) {
	if repo == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "service", "cmd", "crewd")); err == nil {
				repo = d
				break
			}
			if filepath.Dir(d) == d {
				return "", fmt.Errorf("no service/cmd/crewd above %s: give -repo or -crewd", wd)
			}
		}
	}
	bin := filepath.Join(dir, "crewd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/crewd")
	cmd.Dir = filepath.Join(repo, "service")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building crewd: %v: %s", err, out)
	}
	return bin, nil
}

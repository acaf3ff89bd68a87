// Command crewload drives a running crewd and reports throughput, latency
// p50/p99/p99.9/max and status counts. With -rate the load is open: each
// request's latency counts from when it was due, and requests sent late
// (every client busy) are counted:
//
//	crewload -url http://localhost:8080 -mode factorial -numbers 1024 -duration 10s -concurrency 16
//	crewload -mode jobs -requests 1000 -rate 200
//	crewload -mode jobs -requests 3000 -concurrency 64 -sleep 5ms-20ms -wait -workers 32
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/crew-go/crew/service/internal/auth"
	"github.com/crew-go/crew/service/internal/load"
)

func main() {
	var o load.Options
	flag.StringVar(&o.URL, "url", "http://localhost:8080", "crewd's API, or several replicas' comma-separated (the posts go to each in turn; the counts and -wait ask the first)")
	flag.StringVar(&o.Mode, "mode", "factorial", "factorial, jobs or mixed")
	flag.IntVar(&o.Numbers, "numbers", 100, "numbers per factorial request")
	flag.StringVar(&o.Job, "job", `{"kind":"sleep","duration":"10ms"}`, "the body of a job request")
	flag.DurationVar(&o.Duration, "duration", 0, "how long to send (or -requests)")
	flag.IntVar(&o.Requests, "requests", 0, "how many requests to send (or -duration)")
	flag.IntVar(&o.Concurrency, "concurrency", 8, "clients sending at once")
	flag.Float64Var(&o.Rate, "rate", 0, "requests per second in all, each timed from when it was due; 0: as fast as the clients go")
	flag.DurationVar(&o.Progress, "progress", time.Second, "how often to print progress; 0: never")
	flag.StringVar(&o.Sleep, "sleep", "", "jobs mode: sleep jobs of durations spread over this range (5ms-20ms), in place of -job")
	flag.BoolVar(&o.Wait, "wait", false, "jobs mode: wait for every accepted job to end, and report the rate they ended at")
	flag.IntVar(&o.Workers, "workers", 0, "crewd's pool bound, for the ideal rate of -wait (workers / mean sleep)")
	tokenFile := flag.String("token-file", "", "a file whose first line is crewd's API token (jobs:submit, and jobs:read for -wait); empty: $"+auth.TokenVar+", or none")
	flag.Parse()
	if o.Duration == 0 && o.Requests == 0 {
		o.Duration = 10 * time.Second
	}
	token, err := auth.ClientToken(*tokenFile, os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crewload: -token-file:", err)
		os.Exit(2)
	}
	o.Token = token
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "crewload:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := load.Run(ctx, o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crewload:", err)
		os.Exit(1)
	}
	fmt.Print(r)
}

// Command crewd is crew's reference service: an HTTP API that runs online
// batches (POST /v1/factorial) and background jobs (POST /v1/jobs) on a
// bounded crew pool, with probes, Prometheus metrics (and pprof, with -pprof) on an admin
// listener, and the stop sequence a Kubernetes pod needs on SIGTERM.
//
// Run crewd -h for every setting; each flag has a CREW_* variable.
//
// crewd token new -name NAME -scopes SCOPES makes an API token and its
// line of the token file (-api-tokens): crewd token new -h.
//
// crewd jobs (list, get, cancel, retry, delete, counts, ends), crewd queues
// (list, pause, resume), crewd replicas and crewd dash act on a running
// crewd's jobs through its API: crewd jobs -h.
//
// crewd probe URL posts a job to a running crewd at URL and waits until it
// has succeeded (the chart's helm test runs it: crewd probe -h).
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/crew-go/crew/service/internal/app"
	"github.com/crew-go/crew/service/internal/auth"
	"github.com/crew-go/crew/service/internal/cli"
	"github.com/crew-go/crew/service/internal/probe"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		os.Exit(probe.Run(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "token" {
		os.Exit(auth.Command(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && (os.Args[1] == "jobs" || os.Args[1] == "queues" || os.Args[1] == "replicas" || os.Args[1] == "workflows" || os.Args[1] == "dash") {
		os.Exit(cli.Main(os.Args[1], os.Args[2:]))
	}
	stop := make(chan os.Signal, 2)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(app.Main(os.Args[1:], os.Getenv, stop, os.Stdout, os.Stderr))
}

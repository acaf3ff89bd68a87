package jsjobs

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
)

// jobRun is how one run went.
type jobRun struct {
	value    json.RawMessage
	err      error
	took     time.Duration
	timedOut bool // ended by the job's own timeout
}

// runJob runs a job within its timeout. A panic of the kind's function
// is its run's error (a *crew.PanicError, as memjobs records it): a failed
// attempt, retried while attempts remain, not an interrupted run.
func runJob(ctx context.Context, job jobs.Prepared) (run jobRun) {
	jctx, cancel := context.WithTimeoutCause(ctx, job.Timeout, errTimedOut)
	defer cancel()
	started := time.Now()
	defer func() {
		if p := recover(); p != nil {
			run = jobRun{err: &crew.PanicError{Task: "job:" + jobs.InfoOf(ctx).Kind, Value: p, Stack: debug.Stack()},
				took: time.Since(started), timedOut: errors.Is(context.Cause(jctx), errTimedOut)}
		}
	}()
	v, err := job.Run(jctx)
	return jobRun{value: v, err: err, took: time.Since(started), timedOut: errors.Is(context.Cause(jctx), errTimedOut)}
}

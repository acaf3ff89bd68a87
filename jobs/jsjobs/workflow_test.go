package jsjobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/natsjs"
)

// TestWorkflowOnThreeServers: a fan-out/fan-in workflow of MaxSteps steps
// submitted to a store of three partitions replicated on three
// nats-server processes is stored and committed within 5 s, and runs to
// its end, every step succeeded. The steps of a level go 16 at once, so
// that the submit is not 1,000 replicated writes' round trips in turn
// (the figures are in CHANGELOG).
func TestWorkflowOnThreeServers(t *testing.T) {
	c := startProcessCluster(t)
	_, _, p := partitionedR3(t, c.urls[0])
	serveOn(t, 16, func(pool *crew.Pool) (*natsjs.Source, error) { return p.Source(pool) })
	steps := []jobs.Step{{Name: "root", Spec: jobstest.Factorial(3)}}
	join := jobs.Step{Name: "join", Spec: jobstest.Factorial(4)}
	for i := range jobs.MaxSteps - 2 {
		name := fmt.Sprintf("s%d", i)
		steps = append(steps, jobs.Step{Name: name, Spec: jobstest.Factorial(3), After: []string{"root"}})
		join.After = append(join.After, name)
	}
	steps = append(steps, join)
	ctx := context.Background()
	began := time.Now()
	wf, _, err := jobs.SubmitWorkflow(ctx, p, steps)
	if err != nil {
		t.Fatal(err)
	}
	submitted := time.Since(began)
	end, err := p.Wait(ctx, wf.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := jobs.ResultOf[jobs.WorkflowResult](end)
	t.Logf("a workflow of %d steps on three servers: submitted and committed in %v, ended %v after the submit began: %v",
		len(steps), submitted.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), res.Ends)
	if err != nil || res.Ends[jobs.Succeeded] != len(steps) {
		t.Errorf("the workflow's end: %+v (%v), want every step succeeded", res.Ends, err)
	}
	if submitted > 5*time.Second {
		t.Errorf("a workflow of %d steps took %v to submit, want at most 5 s", len(steps), submitted)
	}
}

package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A workflow is submitted whole or not at all, though a store takes its
// steps one at a time: a submitter that stops midway (killed, its store
// cut off) leaves no step to run. Two jobs of the workflow's own make it
// so, with the rules of dependencies (after.go) and nothing more:
//   - its deadline (kind "workflow.deadline"), submitted first, whose run
//     waits until 2×CommitWithin after the submit began, then fails (a run
//     that waits, not a job due later: the in-memory store has none);
//   - its gate (kind "workflow.gate"), after the deadline even on failure,
//     which succeeds when the deadline ended canceled and fails otherwise;
//   - every step, and the workflow's own job, has the gate as its
//     Spec.Gate: it waits for it, a gate failed or canceled cancels it
//     (EvenOnFailure or not), and its run does not see it among its
//     parents. An uncommitted workflow's own job reads canceled.
//
// The submit commits by cancelling the deadline, once every step and the
// workflow's own job are stored: the gate then opens, and the steps run.
// A submitter that stops before that leaves the deadline to fail at its
// time, which fails the gate and cancels every step stored: nothing of an
// uncommitted workflow runs, and its steps read canceled 2×CommitWithin
// after the submit began (later if no worker was free for the deadline;
// a deadline whose process is killed runs again elsewhere, as any job). A submit refused midway cancels the gate (every step
// with it) before the deadline: cancelling the deadline first would open
// the gate. A submit that took longer than CommitWithin is undone, not
// committed: its deadline may be near.
//
// The deadline's cancel is the commit: an operator who cancels a deadline
// job commits its workflow as it stands. The cost: two jobs a workflow, a
// worker held by the deadline while the submit lasts, and the gate's run
// between the commit and the first steps' start.

// CommitWithin bounds how long SubmitWorkflow may take by default, from
// its first write to its commit (WithCommitWithin); an uncommitted
// workflow's steps are canceled 2×CommitWithin after its first write.
const CommitWithin = time.Minute

// ErrNotCommitted is the gate's failure, and SubmitWorkflow's error, when
// a workflow's submit was not committed in time: its steps are canceled.
var ErrNotCommitted = errors.New("jobs: the workflow's submit did not commit in time: its steps are canceled")

// WorkflowOption sets how SubmitWorkflow submits.
type WorkflowOption func(*workflowConfig)

type workflowConfig struct{ within time.Duration }

// WithCommitWithin bounds the submit's time before its commit (more than
// 0; CommitWithin by default): a workflow whose steps a store takes slowly
// needs more; an uncommitted one is canceled after 2×d.
func WithCommitWithin(d time.Duration) WorkflowOption {
	return func(c *workflowConfig) { c.within = d }
}

// WorkflowDeadlineArgs are the arguments of a workflow's deadline job: when
// it fails.
type WorkflowDeadlineArgs struct {
	At time.Time `json:"at"`
}

func (WorkflowDeadlineArgs) Kind() string { return "workflow.deadline" }

// WorkflowGateArgs are the arguments of a workflow's gate job.
type WorkflowGateArgs struct{}

func (WorkflowGateArgs) Kind() string { return "workflow.gate" }

// registerCommit registers the deadline's and the gate's kinds in ks.
func registerCommit(ks *Kinds) error {
	err := Register(ks, func(ctx context.Context, a WorkflowDeadlineArgs) (struct{}, error) {
		// It waits for its time within its run's timeout (a tenth of it
		// to spare, at most a second), and past that snoozes (the
		// JetStream store runs it again later, no attempt spent; in
		// memory the submit is long done).
		wake := a.At
		if end, ok := ctx.Deadline(); ok {
			end = end.Add(-min(time.Second, time.Until(end)/10))
			if end.Before(wake) {
				wake = end
			}
		}
		t := time.NewTimer(time.Until(wake))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return struct{}{}, ctx.Err() // canceled: the commit; or its process stops, and it runs again
		}
		if left := time.Until(a.At); left > 0 {
			return struct{}{}, Snooze(left)
		}
		return struct{}{}, Permanent(ErrNotCommitted)
	}, WithMaxAttempts(1))
	if err != nil {
		return err
	}
	return Register(ks, func(ctx context.Context, _ WorkflowGateArgs) (struct{}, error) {
		ends, err := ParentEnds(ctx)
		if err != nil {
			// The store out: read again later, no attempt spent.
			return struct{}{}, Snooze(time.Second)
		}
		if ends[Canceled] != 1 {
			return struct{}{}, Permanent(ErrNotCommitted)
		}
		return struct{}{}, nil
	}, WithMaxAttempts(1))
}

// workflowGate is a workflow's deadline and gate, as stored.
type workflowGate struct {
	r              Canceler
	deadline, gate string
	begun          time.Time
	within         time.Duration
}

// openGate stores the deadline and the gate. On an error, nothing is left
// to run.
func openGate(ctx context.Context, r Canceler, within time.Duration) (*workflowGate, error) {
	g := &workflowGate{r: r, begun: time.Now(), within: within}
	spec, err := NewSpec(WorkflowDeadlineArgs{At: g.begun.Add(2 * within)})
	if err != nil {
		return nil, err
	}
	d, err := r.Submit(ctx, spec)
	if err != nil {
		return nil, err
	}
	g.deadline = d.ID
	if spec, err = NewSpec(WorkflowGateArgs{}); err != nil {
		return nil, g.undo(ctx, err)
	}
	spec.After, spec.EvenOnFailure = []string{d.ID}, true
	gate, err := r.Submit(ctx, spec)
	if err != nil {
		// No gate, so no step: the deadline goes, failing nothing.
		_, _, _ = r.Cancel(context.WithoutCancel(ctx), d.ID)
		return nil, err
	}
	g.gate = gate.ID
	return g, nil
}

// behind has a step's spec, or the workflow's own job's, wait for the
// gate.
func (g *workflowGate) behind(spec *Spec) { spec.Gate = g.gate }

// undo cancels the gate, which cancels every step stored, then the
// deadline, and returns err. A gate not cancelled (the store out) leaves
// the deadline to fail it at its time.
func (g *workflowGate) undo(ctx context.Context, err error) error {
	ctx = context.WithoutCancel(ctx)
	if g.gate != "" {
		if _, _, cerr := g.r.Cancel(ctx, g.gate); cerr != nil {
			return err
		}
	}
	_, _, _ = g.r.Cancel(ctx, g.deadline)
	return err
}

// commit cancels the deadline, which opens the gate, unless the submit
// took longer than its bound (undone). A cancel whose outcome is unknown
// (the store out) is settled by cancelling the gate: refused as ended
// successfully, the workflow was committed; cancelled, it was not, and no
// step runs.
func (g *workflowGate) commit(ctx context.Context) error {
	if took := time.Since(g.begun); took > g.within {
		return g.undo(ctx, fmt.Errorf("%w: its submit took %v, more than %v", ErrNotCommitted, took.Round(time.Millisecond), g.within))
	}
	ctx = context.WithoutCancel(ctx)
	_, _, err := g.r.Cancel(ctx, g.deadline)
	var ended *EndedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ended):
		return ErrNotCommitted // the deadline ran: the gate fails
	}
	_, _, gerr := g.r.Cancel(ctx, g.gate)
	switch {
	case errors.As(gerr, &ended) && ended.State == Succeeded:
		return nil
	case gerr == nil || errors.As(gerr, &ended):
		return fmt.Errorf("%w: %w", ErrNotCommitted, err)
	}
	return fmt.Errorf("the workflow's commit is unknown (its deadline job %s's cancel: %w; its gate %s's: %w): its steps run if the gate %s succeeds", g.deadline, err, g.gate, gerr, g.gate)
}

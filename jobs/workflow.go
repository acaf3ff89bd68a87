package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// A workflow is a set of named steps, each a job that waits for the steps
// it names (Step.After), submitted in one call (SubmitWorkflow) and read as
// one object: the workflow's own job, of kind "workflow"
// (RegisterWorkflow), waits for every step whatever its end, and its id is
// the workflow's. Its arguments hold the graph (each step's name, id and
// parents) while it waits; once every step has ended it succeeds, its
// result the graph and the steps' counts by end (WorkflowResult). The
// rules of dependencies (after.go) are the steps': a step that fails
// cancels what waits on it, unless its dependant runs EvenOnFailure.

// Step is a step of a workflow: its name (1 to MaxStepName bytes, unique
// in the workflow), its job, and the names of the steps it waits for.
type Step struct {
	Name  string   `json:"name"`
	Spec  Spec     `json:"spec"`
	After []string `json:"after,omitempty"`
}

// MaxStepName is the longest step name.
const MaxStepName = 64

// MaxSteps is the most steps a workflow may have: its own job waits for
// every one, and its arguments and result carry the graph.
const MaxSteps = 1000

// WorkflowStep is a step as its workflow keeps it: its name, its job's id,
// and the names of the steps it waits for.
type WorkflowStep struct {
	Name  string   `json:"name"`
	ID    string   `json:"id"`
	After []string `json:"after,omitempty"`
}

// WorkflowArgs are the arguments of a workflow's own job: its steps,
// parents first.
type WorkflowArgs struct {
	Steps []WorkflowStep `json:"steps"`
	// Gate is the job every step waits for, opened by the submit's commit
	// (workflow_commit.go).
	Gate string `json:"gate,omitempty"`
}

func (WorkflowArgs) Kind() string { return "workflow" }

// Validate checks the steps as SubmitWorkflow made them.
func (a WorkflowArgs) Validate() error {
	if len(a.Steps) == 0 || len(a.Steps) > MaxSteps {
		return fmt.Errorf(`"steps": %d, want 1 to %d`, len(a.Steps), MaxSteps)
	}
	return nil
}

// WorkflowResult is the result of a workflow's own job: its steps and how
// many ended in each state.
type WorkflowResult struct {
	Steps []WorkflowStep `json:"steps"`
	Ends  Counts         `json:"ends"`
}

// RegisterWorkflow registers the kinds of a workflow's own job in ks (its
// run counts its steps' ends, ParentEnds) and of its deadline and gate
// (workflow_commit.go).
func RegisterWorkflow(ks *Kinds) error {
	if err := registerCommit(ks); err != nil {
		return err
	}
	return Register(ks, func(ctx context.Context, a WorkflowArgs) (WorkflowResult, error) {
		ends, err := ParentEnds(ctx)
		return WorkflowResult{Steps: a.Steps, Ends: ends}, err
	})
}

// StepIDs are the job ids of steps, in their order.
func StepIDs(steps []WorkflowStep) []string {
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = s.ID
	}
	return ids
}

// WorkflowOf reads the steps of a workflow from its own job's record: its
// arguments while it waits, its result once it has ended. A record of
// another kind is ErrNotFound.
func WorkflowOf(rec Record) ([]WorkflowStep, error) {
	if rec.Kind != (WorkflowArgs{}).Kind() {
		return nil, ErrNotFound
	}
	if rec.Spec != nil {
		var a WorkflowArgs
		err := json.Unmarshal(rec.Spec.Args, &a)
		return a.Steps, err
	}
	res, err := ResultOf[WorkflowResult](rec)
	return res.Steps, err
}

// SubmitWorkflow checks steps (names, parents named in the workflow, no
// cycle, at most MaxSteps steps; an *InvalidError naming the fault, nothing
// stored), then submits the workflow whole or not at all
// (workflow_commit.go): its deadline and gate, each step after its parents,
// parents first (the steps whose parents are all stored, up to 16 at once),
// and after the gate, the workflow's own job after every
// step, then its commit. The record returned is the workflow's own job's:
// its id is the workflow's. A submit refused midway cancels what it stored
// before it returns its error; one that stops (its process killed) leaves
// its steps to be canceled at its deadline. A step's spec may not name ids
// in its own After or Gate: its parents are steps.
func SubmitWorkflow(ctx context.Context, r Canceler, steps []Step, opts ...WorkflowOption) (Record, []WorkflowStep, error) {
	order, err := workflowOrder(steps)
	if err != nil {
		return Record{}, nil, err
	}
	cfg := workflowConfig{within: CommitWithin}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.within <= 0 {
		return Record{}, nil, &InvalidError{fmt.Sprintf("commit within %v: want more than 0", cfg.within)}
	}
	g, err := openGate(ctx, r, cfg.within)
	if err != nil {
		return Record{}, nil, err
	}
	undo := func(err error) (Record, []WorkflowStep, error) {
		return Record{}, nil, g.undo(ctx, err)
	}
	ids := make(map[string]string, len(steps))
	kept := make([]WorkflowStep, 0, len(steps))
	for _, level := range workflowLevels(steps, order) {
		recs, err := submitLevel(ctx, r, g, steps, level, ids)
		if err != nil {
			return undo(err)
		}
		for k, i := range level {
			ids[steps[i].Name] = recs[k].ID
			kept = append(kept, WorkflowStep{Name: steps[i].Name, ID: recs[k].ID, After: steps[i].After})
		}
	}
	spec, err := NewSpec(WorkflowArgs{Steps: kept, Gate: g.gate})
	if err != nil {
		return undo(err)
	}
	for _, s := range kept {
		spec.After = append(spec.After, s.ID)
	}
	spec.EvenOnFailure = true
	g.behind(&spec)
	rec, err := r.Submit(ctx, spec)
	if err != nil {
		return undo(err)
	}
	if err := g.commit(ctx); err != nil {
		return Record{}, nil, err
	}
	return rec, kept, nil
}

// submitters bounds the submits of one level of a workflow under way at
// once.
const submitters = 16

// submitLevel submits the steps of one level (indexes into steps, whose
// parents' ids are in ids), up to submitters at once, and returns their
// records in the level's order; the first step's error in that order, once
// every submit begun has ended.
func submitLevel(ctx context.Context, r Canceler, g *workflowGate, steps []Step, level []int, ids map[string]string) ([]Record, error) {
	recs := make([]Record, len(level))
	errs := make([]error, len(level))
	sem := make(chan struct{}, submitters)
	var wg sync.WaitGroup
	for k, i := range level {
		s := steps[i]
		spec := s.Spec
		spec.After = nil
		for _, p := range s.After {
			spec.After = append(spec.After, ids[p])
		}
		g.behind(&spec)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			recs[k], errs[k] = r.Submit(ctx, spec)
		})
	}
	wg.Wait()
	for k, err := range errs {
		if err == nil {
			continue
		}
		var invalid *InvalidError
		if errors.As(err, &invalid) {
			err = &InvalidError{fmt.Sprintf("step %q: %s", steps[level[k]].Name, invalid.Reason)}
		}
		return nil, err
	}
	return recs, nil
}

// workflowLevels groups order (steps' indexes, each after its parents)
// into levels: a step's level is one past its deepest parent's, so the
// steps of a level wait only for steps of the levels before it, and are
// submitted together.
func workflowLevels(steps []Step, order []int) [][]int {
	index := make(map[string]int, len(steps))
	for i, s := range steps {
		index[s.Name] = i
	}
	depth := make([]int, len(steps))
	var levels [][]int
	for _, i := range order {
		for _, p := range steps[i].After {
			depth[i] = max(depth[i], depth[index[p]]+1)
		}
		if depth[i] == len(levels) {
			levels = append(levels, nil)
		}
		levels[depth[i]] = append(levels[depth[i]], i)
	}
	return levels
}

// workflowOrder checks steps and returns their indexes, each after its
// parents (Kahn's order, ties in the order given).
func workflowOrder(steps []Step) ([]int, error) {
	if len(steps) == 0 || len(steps) > MaxSteps {
		return nil, &InvalidError{fmt.Sprintf(`"steps": %d, want 1 to %d`, len(steps), MaxSteps)}
	}
	index := make(map[string]int, len(steps))
	for i, s := range steps {
		switch _, dup := index[s.Name]; {
		case s.Name == "" || len(s.Name) > MaxStepName:
			return nil, &InvalidError{fmt.Sprintf(`step %d: "name" %.80q: want 1 to %d bytes`, i, s.Name, MaxStepName)}
		case dup:
			return nil, &InvalidError{fmt.Sprintf(`step %q: named twice`, s.Name)}
		case len(s.Spec.After) > 0 || s.Spec.Gate != "":
			return nil, &InvalidError{fmt.Sprintf(`step %q: its spec's "after" or "gate" names jobs; a step names the steps it waits for`, s.Name)}
		}
		index[s.Name] = i
	}
	children := make([][]int, len(steps))
	left := make([]int, len(steps))
	for i, s := range steps {
		seen := map[string]bool{}
		for _, p := range s.After {
			j, ok := index[p]
			switch {
			case !ok:
				return nil, &InvalidError{fmt.Sprintf(`step %q: "after" %.80q: no such step`, s.Name, p)}
			case seen[p]:
				return nil, &InvalidError{fmt.Sprintf(`step %q: "after" %q named twice`, s.Name, p)}
			}
			seen[p] = true
			children[j] = append(children[j], i)
			left[i]++
		}
	}
	var order []int
	for i := range steps {
		if left[i] == 0 {
			order = append(order, i)
		}
	}
	for k := 0; k < len(order); k++ {
		for _, c := range children[order[k]] {
			if left[c]--; left[c] == 0 {
				order = append(order, c)
			}
		}
	}
	if len(order) < len(steps) {
		var cycle []string
		for i, n := range left {
			if n > 0 {
				cycle = append(cycle, steps[i].Name)
			}
		}
		return nil, &InvalidError{fmt.Sprintf(`"steps": a cycle among %q`, cycle)}
	}
	return order, nil
}

// RetryWorkflow runs again the steps of a workflow that ended without
// success (failed, timed out, canceled, not run), parents first, so that
// each waits for its parents retried (Retry has a job with parents wait
// for them again); a succeeded step is not run again, and one not ended is
// left as it is. It returns the steps retried; the first error stops it.
func RetryWorkflow(ctx context.Context, r Retrier, steps []WorkflowStep) ([]WorkflowStep, error) {
	var retried []WorkflowStep
	for _, s := range steps {
		rec, err := r.Get(ctx, s.ID)
		if err != nil {
			return retried, fmt.Errorf("step %q: %w", s.Name, err)
		}
		if !rec.State.Terminal() || rec.State == Succeeded {
			continue
		}
		if _, err := r.Retry(ctx, s.ID); err != nil {
			return retried, fmt.Errorf("step %q: %w", s.Name, err)
		}
		retried = append(retried, s)
	}
	return retried, nil
}

// CancelWorkflow cancels every step of a workflow not ended (what waits on
// a step canceled is canceled in turn, and the workflow's own job then
// ends, counting them). A step that ends meanwhile is left as it is; the
// first other error stops it.
func CancelWorkflow(ctx context.Context, r Canceler, steps []WorkflowStep) error {
	for _, s := range steps {
		_, _, err := r.Cancel(ctx, s.ID)
		var ended *EndedError
		if err != nil && !errors.As(err, &ended) {
			return fmt.Errorf("step %q: %w", s.Name, err)
		}
	}
	return nil
}

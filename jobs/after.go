package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Dependencies: a job submitted with Spec.After waits for its parents.
// The rules every store keeps:
//   - the job is Waiting from its submit until each parent has ended (a
//     terminal state; a parent retrying has not), then Queued, and runs
//     once in effect like any other job;
//   - a parent that ended without success cancels it (Canceled, while
//     Waiting, its Error naming the parent), at once, without waiting for
//     the other parents, unless Spec.EvenOnFailure (CanceledBy); a
//     canceled job's own dependants are canceled in turn;
//   - a job waits for its Spec.Gate too (WaitsFor), which cancels it
//     whatever EvenOnFailure says, and which its run does not see as a
//     parent;
//   - a parent must be known to the store when the job is submitted: an
//     unknown one is an *InvalidError naming it, and nothing is stored;
//   - cancelling a waiting job cancels it like a queued one.
//
// A waiting job takes more parents while it waits (ParentAdder): a batch
// grows while its callback waits. The rules:
//   - only a job still Waiting takes more (ErrNotWaiting once it is
//     released, ended or canceled): its parents counted so far may all
//     have ended, and it waits for the added ones too;
//   - an added parent keeps Spec.After's rules (known, a job id, at most
//     MaxAfter in all), a parent already there is skipped (so that an add
//     repeated is answered like the first), the job itself is refused;
//   - an added parent must not be Waiting itself (it could wait for this
//     job): a job queued, running or ended only.
//
// A cycle cannot be made: a job can only wait for jobs that exist before
// it, or, added, for jobs that wait for nothing.

// MaxAfter is the most parents a job may wait for: a join of 10,000
// chunks. Its record carries their ids (about 20 bytes each, twice: its
// After and its spec's), 380 KB at the bound, well under a NATS message's
// default bound of 1 MB; a workflow has at most MaxSteps steps.
const MaxAfter = 10000

// checkAfter refuses a spec's After that no store could keep.
func checkAfter(spec Spec) error {
	switch {
	case len(spec.After) == 0 && spec.EvenOnFailure:
		return &InvalidError{`"even_on_failure" without "after": it says what a parent's failure does`}
	case spec.Gate != "" && !ValidID(spec.Gate):
		return &InvalidError{fmt.Sprintf(`"gate" %.40q: not a job id`, spec.Gate)}
	case spec.Gate != "" && (!spec.RunAt.IsZero() || spec.Delay != 0):
		return &InvalidError{`"gate" with "run_at" or "delay": a job waits for its gate or for a time, not both`}
	case spec.Gate != "" && slices.Contains(spec.After, spec.Gate):
		return &InvalidError{fmt.Sprintf(`"gate" %s: among "after" too`, spec.Gate)}
	case len(spec.After) == 0:
		return nil
	case len(spec.After) > MaxAfter:
		return &InvalidError{fmt.Sprintf(`"after": %d jobs, want at most %d`, len(spec.After), MaxAfter)}
	case !spec.RunAt.IsZero() || spec.Delay != 0:
		return &InvalidError{`"after" with "run_at" or "delay": a job waits for its parents or for a time, not both`}
	}
	seen := make(map[string]bool, len(spec.After))
	for i, id := range spec.After {
		switch {
		case !ValidID(id):
			return &InvalidError{fmt.Sprintf(`"after"[%d] %.40q: not a job id`, i, id)}
		case seen[id]:
			return &InvalidError{fmt.Sprintf(`"after"[%d] %s: named twice`, i, id)}
		}
		seen[id] = true
	}
	return nil
}

// CanceledBy tells whether a parent's end in state st cancels a waiting
// job of spec: an end without success does, unless EvenOnFailure and the
// parent is not the job's Gate. Every store decides with it.
func (spec Spec) CanceledBy(parent string, st State) bool {
	return st != Succeeded && (!spec.EvenOnFailure || parent == spec.Gate)
}

// WaitsFor is every job a job of spec waits for: its parents, then its
// gate.
func (spec Spec) WaitsFor() []string {
	if spec.Gate == "" {
		return spec.After
	}
	return append(slices.Clip(spec.After), spec.Gate)
}

// ParentAdder is a store whose waiting jobs take more parents while they
// wait; both stores are.
type ParentAdder interface {
	Runner
	// AddAfter adds parents to waiting job id, with the rules above, and
	// returns its record: ErrNotWaiting for a job that waits no more, an
	// *InvalidError for a parent refused (nothing added), ErrNotFound for
	// an unknown job.
	AddAfter(ctx context.Context, id string, after ...string) (Record, error)
}

// ErrNotWaiting is AddAfter's answer for a job that no longer waits for
// its parents: released, ended or canceled.
var ErrNotWaiting = errors.New("job not waiting for its parents (released, ended or canceled): it takes no more")

// Added is the parents of after not yet among rec's, checked by the rules
// of AddAfter a store need not read: rec waiting, each a job id named
// once, not rec itself, at most MaxAfter in all. The store then checks
// each is known (UnknownParent) and not waiting (AddedParentWaits).
func Added(rec Record, after []string) ([]string, error) {
	if len(after) == 0 {
		return nil, &InvalidError{`"after": no job to add`}
	}
	seen := make(map[string]bool, len(rec.After)+len(after))
	for _, id := range rec.After {
		seen[id] = true
	}
	var added []string
	for i, id := range after {
		switch {
		case !ValidID(id):
			return nil, &InvalidError{fmt.Sprintf(`"after"[%d] %.40q: not a job id`, i, id)}
		case id == rec.ID:
			return nil, &InvalidError{fmt.Sprintf(`"after"[%d] %s: the job itself`, i, id)}
		case seen[id]:
			continue
		}
		seen[id] = true
		added = append(added, id)
	}
	if rec.State != Waiting {
		return nil, fmt.Errorf("%w: job %s is %s", ErrNotWaiting, rec.ID, rec.State)
	}
	if n := len(rec.After) + len(added); n > MaxAfter {
		return nil, &InvalidError{fmt.Sprintf(`"after": %d jobs in all, want at most %d`, n, MaxAfter)}
	}
	return added, nil
}

// AddedParentWaits is the refusal of an added parent that waits itself.
func AddedParentWaits(id string) error {
	return &InvalidError{fmt.Sprintf(`"after": job %s waits for its own parents: only a job that waits for none can be added`, id)}
}

// UnknownParent is the refusal of a job whose parent the store does not
// know.
func UnknownParent(id string) error {
	return &InvalidError{fmt.Sprintf(`"after": no job %s (unknown, or its record was evicted)`, id)}
}

// ParentEnded is the Error of a job canceled because its parent id ended
// in state st.
func ParentEnded(id string, st State) string {
	return fmt.Sprintf("canceled while waiting: its parent %s ended %s", id, st)
}

// getter reads a job's record: a store's Get, given to its runs.
type getter func(ctx context.Context, id string) (Record, error)

type getterKey struct{}

// WithGetter returns ctx carrying get, a store's Get, for a store to give
// a run: ParentResult and ParentEnds read through it.
func WithGetter(ctx context.Context, get func(ctx context.Context, id string) (Record, error)) context.Context {
	return context.WithValue(ctx, getterKey{}, getter(get))
}

// ParentResult decodes the result of parent id of the job whose run ctx
// is, as its kind's result type R: its record read from the store, then
// ResultOf. A job that is no parent of this one is an error, as is a run
// of a store that gives its runs no Getter.
func ParentResult[R any](ctx context.Context, id string) (R, error) {
	var r R
	info := InfoOf(ctx)
	found := false
	for _, p := range info.After {
		found = found || p == id
	}
	if !found {
		return r, fmt.Errorf("jobs: job %s is no parent of job %s (after %v)", id, info.ID, info.After)
	}
	get, _ := ctx.Value(getterKey{}).(getter)
	if get == nil {
		return r, fmt.Errorf("jobs: job %s's run has no store to read its parent %s from", info.ID, id)
	}
	rec, err := get(ctx, id)
	if err != nil {
		return r, err
	}
	return ResultOf[R](rec)
}

// ParentEnds counts the parents of the job whose run ctx is by the state
// they ended in: what a batch's callback is given (a job after every job of
// the batch, with EvenOnFailure, as Sidekiq's on_complete). Each parent's
// record is read from the store; a parent not ended (a run of a job
// without parents) is counted in its state as read.
func ParentEnds(ctx context.Context) (Counts, error) {
	info := InfoOf(ctx)
	get, _ := ctx.Value(getterKey{}).(getter)
	if get == nil {
		return nil, fmt.Errorf("jobs: job %s's run has no store to read its parents from", info.ID)
	}
	counts := Counts{}
	for _, id := range info.After {
		rec, err := get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("jobs: parent %s of job %s: %w", id, info.ID, err)
		}
		counts[rec.State]++
	}
	return counts, nil
}

// GetAll reads the records of ids with get (a store's Get), 16 at a time:
// each record, or why it was not read, in the order of ids.
func GetAll(ctx context.Context, get func(ctx context.Context, id string) (Record, error), ids []string) ([]Record, []error) {
	recs, errs := make([]Record, len(ids)), make([]error, len(ids))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			recs[i], errs[i] = get(ctx, id)
		})
	}
	wg.Wait()
	return recs, errs
}

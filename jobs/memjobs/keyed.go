package memjobs

import (
	"context"
	"fmt"

	"github.com/crew-go/crew/jobs"
)

// SubmitOnce implements Runner, in memory: a key answers its job as long as
// the job's record is kept.
func (r *Runner) SubmitOnce(ctx context.Context, spec jobs.Spec, key string) (jobs.Record, bool, error) {
	if err := jobs.CheckKey(key); err != nil {
		return jobs.Record{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return jobs.Record{}, false, err
	}
	def, longest := jobs.Timeouts(r.DefaultTimeout, r.MaxTimeout)
	job, err := r.Kinds.Prepare(spec, def, longest)
	if err != nil {
		return jobs.Record{}, false, err
	}
	kh, fp := jobs.KeyHash(key), job.Request()
	// One keyed submit at a time: the check and the submit are one step.
	r.Store.keyMu.Lock()
	defer r.Store.keyMu.Unlock()
	if id, req, ok := r.Store.keyed(kh); ok {
		if req != fp {
			return jobs.Record{}, false, fmt.Errorf("%w: the job %s was posted under it with another body", jobs.ErrKeyReused, id)
		}
		if rec, err := r.Get(ctx, id); err == nil {
			return rec, true, nil
		}
	}
	rec, err := r.Submit(ctx, spec)
	if err != nil {
		return jobs.Record{}, false, err
	}
	r.Store.setKey(rec.ID, kh, fp)
	return rec, false, nil
}

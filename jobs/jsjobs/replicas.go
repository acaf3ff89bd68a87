package jsjobs

import (
	"context"
	"time"

	"github.com/crew-go/crew/jobs"
)

// What each process running jobs says of itself, so that an operator sees
// the replicas and what each runs (jobs.ReplicaLister):
//   - A process announces itself from its first Source on, every
//     replicaEvery: one key of the records' bucket, replica.<name>, holding
//     a jobs.Replica (the jobs it runs now, from runs: announce.go). The message expires
//     after replicaTTL, so a process killed leaves by itself; Close purges
//     the key, so one stopped leaves at once. Cost: one replicated write a
//     process every replicaEvery, whatever its load.
//   - The index's tail of the bucket reads the announcements as it reads
//     the records (board), so Replicas costs no store read beyond the
//     tail's catch-up; an announcement older than replicaTTL by the
//     store's clock is left out (its expiry is not a message the tail
//     reads).

// Replicas implements jobs.ReplicaLister, from the index's tail of the
// records' bucket, caught up as List catches it up.
func (r *Runner) Replicas(ctx context.Context) ([]jobs.Replica, error) {
	t, err := r.tails()
	if err != nil {
		return nil, err
	}
	if err := r.loaded(ctx, t); err != nil {
		return nil, err
	}
	r.synced(ctx, t)
	return t.replicas.standing(time.Now()), nil
}

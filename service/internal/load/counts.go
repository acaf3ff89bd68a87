package load

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// countsEvery is how far apart the wait asks crewd's counts, and
// countsStill how long they may stay the same before the wait stops
// trusting them (records evicted as fast as jobs end, another client's
// jobs live for ever) and reads the records.
const countsEvery = 20 * time.Millisecond

var countsStill = 5 * time.Second // a variable for the tests

// The states of a job as GET /v1/jobs/counts names them: live ones may
// still change, ended ones will not.
var (
	liveStates  = []string{"queued", "running", "retrying"}
	endedStates = []string{"succeeded", "failed", "timed_out", "canceled", "not_run"}
	allStates   = slices.Concat([]string{"scheduled"}, liveStates, endedStates)
)

// jobCounts is what the wait takes of GET /v1/jobs/counts: the jobs crewd
// holds live and ended, whoever posted them.
type jobCounts struct{ live, ended int }

// readCounts asks crewd for its counts of jobs; false when it does not
// answer them (an older crewd's 404, a store that cannot count, a failed
// request) or answers without every state named.
func readCounts(ctx context.Context, c *http.Client, url string) (jobCounts, bool) {
	code, body, err := get(ctx, c, url+"/v1/jobs/counts")
	if err != nil || code != http.StatusOK {
		return jobCounts{}, false
	}
	var answer struct{ Counts map[string]int }
	if json.Unmarshal(body, &answer) != nil {
		return jobCounts{}, false
	}
	for _, st := range allStates {
		if _, ok := answer.Counts[st]; !ok {
			return jobCounts{}, false
		}
	}
	var n jobCounts
	for _, st := range liveStates {
		n.live += answer.Counts[st]
	}
	for _, st := range endedStates {
		n.ended += answer.Counts[st]
	}
	return n, true
}

// awaitCounts asks crewd's counts, one request at a time, countsEvery
// apart, until they say that the accepted jobs have likely ended: the
// ended jobs have grown by accepted since before (the counts read before
// the first post), or no job is live. It returns ctx's error if ctx ends
// first, and nil as soon as a request fails: the per-job pass that follows
// waits for every job on its own.
//
// The counts are crewd's, not the run's, so they only tell when reading
// each job's record is worth it: jobs of other clients end too, and
// records expire or are evicted, so the ended count can grow by less than
// the jobs that ended, or shrink; when that hides the growth, the live
// count reaching 0 still ends the wait, and counts that stay the same for
// countsStill end it too.
func awaitCounts(ctx context.Context, c *http.Client, url string, before jobCounts, accepted int) error {
	last, changed := before, time.Now()
	for {
		now, ok := readCounts(ctx, c, url)
		if err := ctx.Err(); err != nil {
			return err
		}
		if !ok || now.ended-before.ended >= accepted || now.live == 0 {
			return nil
		}
		if now != last {
			last, changed = now, time.Now()
		} else if time.Since(changed) >= countsStill {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(countsEvery):
		}
	}
}

package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// awaitJobs waits for the jobs the run had accepted to end, and reports
// how long they took. While they run it asks only crewd's counts, one
// request at a time (awaitCounts), when crewd answered them before the
// first post; then it reads every job's record (awaitJobs), which decides
// what is reported: the records' "finished" is the measure, whenever they
// are read, so reading them once the jobs have ended takes nothing from
// the cores the jobs run on. Without counts it reads the records at once.
func (r *run) awaitJobs(ctx context.Context) (*JobsReport, error) {
	j := &JobsReport{Accepted: len(r.ids), Work: r.work, Workers: r.o.Workers}
	if len(r.ids) > 0 {
		j.Accept = r.lastOK.Sub(r.start)
	}
	if r.counted && len(r.ids) > 0 {
		if err := awaitCounts(ctx, r.client, r.url, r.before, len(r.ids)); err != nil {
			return nil, fmt.Errorf("waiting for the jobs: %w", err)
		}
	}
	last, ended, succeeded, err := awaitJobs(ctx, r.client, r.url, r.ids, r.o.Concurrency)
	if err != nil {
		return nil, err
	}
	j.Ended, j.Completed = ended, succeeded
	if !last.IsZero() {
		j.Complete = last.Sub(r.start)
	}
	return j, nil
}

// awaitJobs asks for every job's record until each has ended, with
// clients clients, and returns the latest "finished" and the counts. Run
// after crewd's counts said the jobs ended, it reads most records once; a
// job still live is asked for again as awaitJob does, so what it returns
// never rests on the counts.
func awaitJobs(ctx context.Context, c *http.Client, url string, ids []string, clients int) (last time.Time, ended, succeeded int, err error) {
	var (
		mu   sync.Mutex
		next atomic.Int64
		wg   sync.WaitGroup
		errs []error
	)
	for range clients {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(ids)) {
					return
				}
				rec, ok, err := awaitJob(ctx, c, url, ids[i])
				if !ok {
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				ended++
				if rec.State == "succeeded" {
					succeeded++
				}
				if rec.Finished.After(last) {
					last = rec.Finished
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("waiting for the jobs: %w", err))
	}
	return last, ended, succeeded, errors.Join(errs...)
}

// jobRecord is what awaitJob reads of a job's record.
type jobRecord struct {
	State    string
	Finished time.Time
}

// awaitJob asks for job id's record until the job has ended (a job
// retrying, or scheduled, has not), and returns
// the record; false when a request fails (its error) or ctx ends first (no
// error). The asks come 20 ms apart at first, then twice as far each time
// up to a second: what is measured is the record's "finished", not when
// it was read, and reads of a backlog must not take the cores its jobs
// run on. Such a backlog is read when crewd's counts could not be waited
// on first, or said ended too soon.
func awaitJob(ctx context.Context, c *http.Client, url, id string) (jobRecord, bool, error) {
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		var rec jobRecord
		code, body, err := get(ctx, c, url+"/v1/jobs/"+id)
		if err == nil && code == http.StatusOK {
			err = json.Unmarshal(body, &rec)
		} else if err == nil {
			err = fmt.Errorf("GET /v1/jobs/%s: %d %.200s", id, code, body)
		}
		if err != nil {
			return jobRecord{}, false, err
		}
		if slices.Contains(endedStates, rec.State) {
			return rec, true, nil
		}
		select {
		case <-ctx.Done():
			return jobRecord{}, false, nil
		case <-time.After(wait):
		}
	}
}

package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// awaitJobs waits for the jobs the run had accepted to end, and reports
// how long they took.
func (r *run) awaitJobs(ctx context.Context) (*JobsReport, error) {
	j := &JobsReport{Accepted: len(r.ids), Work: r.work, Workers: r.o.Workers}
	if len(r.ids) > 0 {
		j.Accept = r.lastOK.Sub(r.start)
	}
	last, ended, succeeded, err := awaitJobs(ctx, r.client, r.o.URL, r.ids, r.o.Concurrency)
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
// clients clients, and returns the latest "finished" and the counts.
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
				for {
					var rec struct {
						State    string
						Finished time.Time
					}
					code, body, gerr := get(ctx, c, url+"/v1/jobs/"+ids[i])
					if gerr == nil && code == http.StatusOK {
						gerr = json.Unmarshal(body, &rec)
					} else if gerr == nil {
						gerr = fmt.Errorf("GET /v1/jobs/%s: %d %.200s", ids[i], code, body)
					}
					if gerr != nil {
						mu.Lock()
						errs = append(errs, gerr)
						mu.Unlock()
						return
					}
					if rec.State != "queued" && rec.State != "running" {
						mu.Lock()
						ended++
						if rec.State == "succeeded" {
							succeeded++
						}
						if rec.Finished.After(last) {
							last = rec.Finished
						}
						mu.Unlock()
						break
					}
					select {
					case <-ctx.Done():
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("waiting for the jobs: %w", err))
	}
	return last, ended, succeeded, errors.Join(errs...)
}

package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/crew-go/crew/jobs"
)

// maxFailures bounds the failed jobs a failures page or a group's retry
// reads (each a read of its record from the store: a page view must not
// load it); beyond it, the page says so.
const maxFailures = 2000

// failureGroup is the failed jobs of one kind with one error.
type failureGroup struct {
	Kind, Error string
	State       jobs.State
	N           int
	Newest      time.Time
	Example     string // a job's id
}

// failures reads the jobs that ended failed or timed out, grouped by state,
// kind and error, the largest group first; more says maxFailures were read
// and there are others.
func (u *UI) failures(ctx context.Context) (groups []failureGroup, more bool, err error) {
	lister, ok := u.Jobs.(jobs.Lister)
	if !ok {
		return nil, false, errors.New("this job store lists no jobs")
	}
	index := map[[3]string]*failureGroup{}
	read := 0
	for _, st := range []jobs.State{jobs.Failed, jobs.TimedOut} {
		q := jobs.Query{State: st, Limit: jobs.MaxLimit}
		for {
			page, err := lister.List(ctx, q)
			if err != nil {
				return nil, false, err
			}
			for _, r := range page.Jobs {
				key := [3]string{string(st), r.Kind, r.Error}
				g, ok := index[key]
				if !ok {
					g = &failureGroup{Kind: r.Kind, Error: r.Error, State: st, Example: r.ID}
					index[key] = g
				}
				g.N++
				if r.Finished.After(g.Newest) {
					g.Newest = r.Finished
				}
			}
			read += len(page.Jobs)
			if read >= maxFailures {
				more = page.Next != ""
				break
			}
			if page.Next == "" {
				break
			}
			q.After = page.Next
		}
	}
	for _, g := range index {
		groups = append(groups, *g)
	}
	slices.SortFunc(groups, func(a, b failureGroup) int {
		return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Error, b.Error))
	})
	return groups, more, nil
}

// failuresPage is the failed and timed-out jobs grouped by kind and error.
func (u *UI) failuresPage(w http.ResponseWriter, r *http.Request, v view) {
	groups, more, err := u.failures(r.Context())
	if err != nil {
		u.message(w, r, http.StatusServiceUnavailable, "The failures cannot be read now: "+err.Error())
		return
	}
	v.Data = struct {
		Groups []failureGroup
		More   bool
		Max    int
	}{groups, more, maxFailures}
	u.render(w, http.StatusOK, "failures", v)
}

// retryGroup retries every job of a group (state, kind, error), as read
// now: one Retry each, the count in the audit line.
func (u *UI) retryGroup(r *http.Request) (string, int, error) {
	if _, ok := u.Jobs.(jobs.Retrier); !ok {
		return "", http.StatusBadRequest, errors.New("this job store retries no job")
	}
	state, kind, msg := jobs.State(r.PostFormValue("state")), r.PostFormValue("kind"), r.PostFormValue("error")
	target := fmt.Sprintf("%s %s jobs failing with %.80q", state, kind, msg)
	if state != jobs.Failed && state != jobs.TimedOut {
		return target, http.StatusBadRequest, errors.New("only failed or timed_out jobs are retried by group")
	}
	lister := u.Jobs.(jobs.Lister)
	var ids []string
	q := jobs.Query{State: state, Kind: kind, Limit: jobs.MaxLimit}
	for len(ids) < maxFailures {
		page, err := lister.List(r.Context(), q)
		if err != nil {
			return target, http.StatusServiceUnavailable, err
		}
		for _, rec := range page.Jobs {
			if rec.Error == msg {
				ids = append(ids, rec.ID)
			}
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	retried := 0
	for _, id := range ids {
		if _, err := u.retryJob(r.Context(), id); err == nil {
			retried++
		}
	}
	return fmt.Sprintf("%s: %d of %d retried", target, retried, len(ids)), http.StatusOK, nil
}

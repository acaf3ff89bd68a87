package ui

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/crew-go/crew/jobs"
)

// periodicPage is every periodic job: its schedule, its job, who set it,
// its last and next tick and its latest ticks' jobs, and a delete.
func (u *UI) periodicPage(w http.ResponseWriter, r *http.Request, v view) {
	s, ok := u.Jobs.(jobs.Scheduler)
	if !ok {
		u.message(w, r, http.StatusNotImplemented, "This job store has no periodic jobs (jobs in memory).")
		return
	}
	ps, err := s.Periodics(r.Context())
	if err != nil {
		u.message(w, r, http.StatusServiceUnavailable, "The periodic jobs cannot be read now: "+err.Error())
		return
	}
	// Each with the records of its latest ticks' jobs (at most
	// jobs.MaxRecentTicks reads each); one gone since is left out.
	type row struct {
		jobs.Periodic
		Jobs []jobs.Record
	}
	rows := make([]row, 0, len(ps))
	for _, p := range ps {
		rw := row{Periodic: p}
		for _, id := range p.Recent {
			if rec, err := u.Jobs.Get(r.Context(), id); err == nil {
				rw.Jobs = append(rw.Jobs, rec)
			}
		}
		rows = append(rows, rw)
	}
	v.Data = rows
	u.render(w, http.StatusOK, "periodic", v)
}

func (u *UI) deletePeriodic(r *http.Request) (string, int, error) {
	name := r.PathValue("name")
	s, ok := u.Jobs.(jobs.Scheduler)
	if !ok {
		return name, http.StatusBadRequest, errors.New("this job store has no periodic jobs")
	}
	if err := jobs.CheckPeriodicName(name); err != nil {
		return "", http.StatusBadRequest, err
	}
	err := s.DeletePeriodic(r.Context(), name)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		return name, http.StatusNotFound, fmt.Errorf("no periodic job %s", name)
	case err != nil:
		return name, http.StatusServiceUnavailable, err
	}
	return name, http.StatusOK, nil
}

package ui

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/crew-go/crew/jobs"
)

// periodicPage is every periodic job: its schedule, its job, who set it,
// and a delete.
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
	v.Data = ps
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

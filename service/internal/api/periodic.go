package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"

	"github.com/crew-go/crew/jobs"
)

// periodicFields are a PUT /v1/periodic/{name} body's own fields: a job's
// (jobFields, less when it is due) and when it ticks.
var periodicFields = bodyFields{
	example: `{"every":"@every 1h","kind":"sleep","duration":"50ms"}`,
	want: func() map[string]string {
		want := maps.Clone(jobFields.want)
		delete(want, "run_at")
		delete(want, "delay")
		want["every"] = `a string: "@every 1h", a cron expression with seconds such as "0 30 2 * * *", or @hourly, @daily, @weekly, @monthly, @yearly`
		want["time_zone"] = `an IANA time zone such as "Europe/Berlin", for a cron expression`
		return want
	}(),
}

// scheduler is the job store's periodic jobs, or false with 501 answered:
// only the JetStream store keeps them.
func (a *API) scheduler(w http.ResponseWriter, r *http.Request) (jobs.Scheduler, bool) {
	s, ok := a.Jobs.(jobs.Scheduler)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "periodic jobs: not taken by this job store (they need the JetStream store)")
	}
	return s, ok
}

// putPeriodic answers PUT /v1/periodic/{name}: the body is a job's, as
// POST /v1/jobs takes it (less run_at and delay), with "every" and an
// optional "time_zone". 200 with the periodic job and whether it changed
// (set as it was, it keeps its ticks where they were); 400 naming the
// field at fault.
func (a *API) putPeriodic(w http.ResponseWriter, r *http.Request) {
	s, ok := a.scheduler(w, r)
	if !ok {
		return
	}
	var body map[string]json.RawMessage
	if !a.decode(w, r, &body, periodicFields) {
		return
	}
	p := jobs.Periodic{Name: r.PathValue("name")}
	for _, f := range []struct {
		field string
		into  *string
	}{{"every", &p.Every}, {"time_zone", &p.TimeZone}} {
		field, into := f.field, f.into
		if raw, ok := body[field]; ok {
			if err := json.Unmarshal(raw, into); err != nil {
				a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%q: want %s, got %.40s", field, periodicFields.want[field], raw))
				return
			}
			delete(body, field)
		}
	}
	for _, field := range []string{"run_at", "delay"} {
		if _, ok := body[field]; ok {
			a.fail(w, r, http.StatusBadRequest, fmt.Sprintf(`%q: a periodic job's ticks say when it runs`, field))
			return
		}
	}
	spec, err := jobSpec(body)
	if err != nil {
		a.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	p.Spec = spec
	p.Spec.Submitter = submitter(r)
	changed, err := s.SetPeriodic(r.Context(), p)
	var invalid *jobs.InvalidError
	switch {
	case errors.As(err, &invalid):
		a.fail(w, r, http.StatusBadRequest, invalid.Error())
	case errors.Is(err, jobs.ErrFull), errors.Is(err, jobs.ErrUnavailable):
		a.unavailable(w, r, err)
	case err != nil:
		a.poolError(w, r, err)
	default:
		answer := periodicAnswer(p)
		answer["changed"] = changed
		writeJSON(w, http.StatusOK, answer)
	}
}

// listPeriodic answers GET /v1/periodic: {"periodic": [...]}, by name.
func (a *API) listPeriodic(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("query %s: /v1/periodic takes no parameters", quoteShort(r.URL.RawQuery)))
		return
	}
	s, ok := a.scheduler(w, r)
	if !ok {
		return
	}
	ps, err := s.Periodics(r.Context())
	if err != nil {
		a.jobAnswer(w, r, "", jobs.Record{}, err)
		return
	}
	list := make([]map[string]any, 0, len(ps))
	for _, p := range ps {
		list = append(list, periodicAnswer(p))
	}
	writeJSON(w, http.StatusOK, map[string]any{"periodic": list})
}

// getPeriodic answers GET /v1/periodic/{name}: 200 with the periodic job,
// 404 for a name none has.
func (a *API) getPeriodic(w http.ResponseWriter, r *http.Request) {
	s, ok := a.scheduler(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	ps, err := s.Periodics(r.Context())
	if err != nil {
		a.jobAnswer(w, r, "", jobs.Record{}, err)
		return
	}
	for _, p := range ps {
		if p.Name == name {
			writeJSON(w, http.StatusOK, periodicAnswer(p))
			return
		}
	}
	a.fail(w, r, http.StatusNotFound, "no periodic job "+quoteShort(name))
}

// deletePeriodic answers DELETE /v1/periodic/{name}: 204 once it ticks no
// more (the jobs its ticks submitted go on), 404 for a name none has.
func (a *API) deletePeriodic(w http.ResponseWriter, r *http.Request) {
	s, ok := a.scheduler(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	switch err := s.DeletePeriodic(r.Context(), name); {
	case errors.Is(err, jobs.ErrNotFound):
		a.fail(w, r, http.StatusNotFound, "no periodic job "+quoteShort(name))
	case err != nil:
		a.jobAnswer(w, r, "", jobs.Record{}, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// periodicAnswer is a periodic job as the API shows it: flat, as a PUT
// body gives it, with its name.
func periodicAnswer(p jobs.Periodic) map[string]any {
	answer := map[string]any{}
	var args map[string]json.RawMessage
	if json.Unmarshal(p.Spec.Args, &args) == nil {
		for k, v := range args {
			answer[k] = v
		}
	}
	answer["name"], answer["every"], answer["kind"] = p.Name, p.Every, p.Spec.Kind
	if p.TimeZone != "" {
		answer["time_zone"] = p.TimeZone
	}
	if p.Spec.Submitter != "" {
		answer["submitter"] = p.Spec.Submitter // who set it: its ticks' jobs are theirs
	}
	if p.Spec.Timeout != 0 {
		answer["timeout"] = p.Spec.Timeout
	}
	if p.Spec.MaxAttempts != 0 {
		answer["max_attempts"] = p.Spec.MaxAttempts
	}
	if !p.Last.IsZero() { // what its latest tick noted
		answer["last_tick"], answer["recent_jobs"] = p.Last, p.Recent
		if !p.Next.IsZero() {
			answer["next_tick"] = p.Next
		}
	}
	return answer
}

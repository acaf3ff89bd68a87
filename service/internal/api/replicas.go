package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/crew-go/crew/jobs"
)

// listReplicas answers GET /v1/replicas: {"replicas": [...], "store":
// [...]}, the crewd replicas serving jobs, each with the jobs it runs now
// (the longest running first, at most jobs.MaxReplicaJobs), as each last
// said, and the job store's replicated parts, each with its leader and its
// followers; 501 from a store that keeps neither (jobs in memory).
func (a *API) listReplicas(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("query %s: /v1/replicas takes no parameters", quoteShort(r.URL.RawQuery)))
		return
	}
	rl, ok := a.Jobs.(jobs.ReplicaLister)
	si, ok2 := a.Jobs.(jobs.StoreInspector)
	if !ok || !ok2 {
		a.fail(w, r, http.StatusNotImplemented, "replicas: not kept by this job store (they need the JetStream store)")
		return
	}
	reps, err := rl.Replicas(r.Context())
	var groups []jobs.StoreGroup
	if err == nil {
		groups, err = si.StoreGroups(r.Context())
	}
	switch {
	case errors.Is(err, jobs.ErrUnavailable):
		a.unavailable(w, r, err)
		return
	case err != nil:
		a.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	if reps == nil {
		reps = []jobs.Replica{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"replicas": reps, "store": groups})
}

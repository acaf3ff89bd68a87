package ui

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/crew-go/crew/jobs"
)

// maxBulk bounds the jobs one bulk action takes.
const maxBulk = 1000

// bulk cancels, retries or deletes the jobs selected on the jobs page: first a page
// that says how many and asks to confirm, then, confirmed, each in turn,
// one audit line with the counts.
func (u *UI) bulk(w http.ResponseWriter, r *http.Request) {
	s, ok := u.admitted(w, r)
	if !ok {
		return
	}
	action := r.PostFormValue("action")
	ids := slices.DeleteFunc(slices.Compact(slices.Sorted(slices.Values(r.PostForm["id"]))), func(id string) bool { return !jobs.ValidID(id) })
	switch {
	case action != "cancel" && action != "retry" && action != "delete":
		u.message(w, r, http.StatusBadRequest, "A bulk action is cancel, retry or delete.")
		return
	case len(ids) == 0:
		u.message(w, r, http.StatusBadRequest, "No job selected.")
		return
	case len(ids) > maxBulk:
		u.message(w, r, http.StatusBadRequest, fmt.Sprintf("%d jobs selected: at most %d at once.", len(ids), maxBulk))
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		u.render(w, http.StatusOK, "confirm", view{Who: s.caller.Name, Login: u.Auth != nil, CSRF: s.csrf, Admin: true,
			Data: struct {
				Action string
				IDs    []string
				Back   string
			}{action, ids, back(r)}})
		return
	}
	do := map[string]func(context.Context, string) (int, error){"cancel": u.cancelJob, "retry": u.retryJob, "delete": u.deleteJob}[action]
	done := 0
	for _, id := range ids {
		if _, err := do(r.Context(), id); err == nil {
			done++
		}
	}
	u.audit(r, s, fmt.Sprintf("%s: %d of %d jobs", action, done, len(ids)), http.StatusOK)
	http.Redirect(w, r, back(r), http.StatusSeeOther)
}

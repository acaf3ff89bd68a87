package ui

import (
	"crypto/rand"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/service/internal/auth"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// UI serves the web UI under /ui/.
type UI struct {
	Jobs jobs.Runner
	// Auth, if not nil, holds the tokens a login takes; nil: no login (crewd
	// serves without tokens), every page and action open.
	Auth *auth.File
	// LocalOnly refuses requests to names not this machine's (see
	// auth.Foreign).
	LocalOnly bool
	Log       *slog.Logger
	// Ready, if not nil, says why this replica cannot take jobs now (its
	// job store unreachable), for the overview; nil error: it can.
	Ready func() error
	// TraceURL, if not "", makes a job's trace a link: the address of the
	// trace UI with {trace_id} where the trace's id goes
	// ("https://jaeger.example/trace/{trace_id}").
	TraceURL string

	backlog    backlog // sampled by Watch
	once       sync.Once
	pages      map[string]*template.Template
	processKey [32]byte // the CSRF key without tokens: this process's
}

func (u *UI) init() {
	u.once.Do(func() {
		_, _ = rand.Read(u.processKey[:])
		u.pages = map[string]*template.Template{}
		funcs := template.FuncMap{"terminal": func(s jobs.State) bool { return s.Terminal() },
			"ago": func(t time.Time) string { return roundDuration(time.Since(t)) }, "dur": roundDuration,
			"percent": func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }}
		for _, name := range []string{"login", "overview", "jobs", "job", "failures", "periodic", "workflow", "confirm", "message"} {
			u.pages[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html"))
		}
	})
}

// Handler is the UI's routes, every one under /ui/.
func (u *UI) Handler() http.Handler {
	u.init()
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFiles, "static")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /ui/login", u.loginForm)
	mux.HandleFunc("POST /ui/login", u.login)
	mux.HandleFunc("POST /ui/logout", u.logout)
	mux.Handle("GET /ui/{$}", u.page(u.overview))
	mux.Handle("GET /ui/jobs", u.page(u.jobList))
	mux.Handle("GET /ui/jobs/{id}", u.page(u.job))
	mux.Handle("GET /ui/failures", u.page(u.failuresPage))
	mux.Handle("GET /ui/workflows/{id}", u.page(u.workflowPage))
	mux.Handle("POST /ui/workflows/{id}/cancel", u.action(u.workflowAction(false)))
	mux.Handle("POST /ui/workflows/{id}/retry", u.action(u.workflowAction(true)))
	mux.Handle("GET /ui/periodic", u.page(u.periodicPage))
	mux.Handle("POST /ui/periodic/{name}/delete", u.action(u.deletePeriodic))
	mux.Handle("POST /ui/failures/retry", u.action(u.retryGroup))
	mux.HandleFunc("POST /ui/jobs/bulk", u.bulk)
	mux.Handle("POST /ui/jobs/{id}/cancel", u.action(u.cancel))
	mux.Handle("POST /ui/jobs/{id}/retry", u.action(u.retry))
	mux.Handle("POST /ui/jobs/{id}/delete", u.action(u.deleteOne))
	mux.Handle("POST /ui/queues/{name}/pause", u.action(u.pause(true)))
	mux.Handle("POST /ui/queues/{name}/resume", u.action(u.pause(false)))
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		u.message(w, r, http.StatusNotFound, "No such page.")
	})
	return headers(mux)
}

// headers sets what every answer of the UI carries: no script, style or
// image but the UI's own, no frame, no referrer, nothing cached.
func headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "same-origin") // no-referrer would make a form's Origin "null"
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// view is what every page's template reads.
type view struct {
	Who   string // the token's name; "" without tokens
	Login bool   // a login is asked for (there is a logout)
	CSRF  string
	Admin bool // the session may act
	Data  any
}

// page serves a page to a session holding jobs:read; without one, the
// login, then back here.
func (u *UI) page(h func(w http.ResponseWriter, r *http.Request, v view)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A link followed from another site is a navigation, not an
		// attack: only a name not this machine's is refused here.
		if why := auth.NotLocal(r, u.LocalOnly && u.Auth == nil); why != "" {
			u.message(w, r, http.StatusForbidden, why)
			return
		}
		s, ok := u.session(r)
		if !ok {
			http.Redirect(w, r, "/ui/login?next="+urlQuery(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if !s.caller.Has(auth.Read) {
			u.message(w, r, http.StatusForbidden, "Token "+s.caller.Name+" lacks scope jobs:read.")
			return
		}
		h(w, r, view{Who: s.caller.Name, Login: u.Auth != nil, CSRF: s.csrf, Admin: s.caller.Has(auth.Admin)})
	})
}

// action serves a form's POST: from the UI's own origin, with the
// session's CSRF token, by a session holding jobs:admin; it writes an
// audit line, and goes back to the page the form was on.
func (u *UI) action(h func(r *http.Request) (target string, status int, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := u.admitted(w, r)
		if !ok {
			return
		}
		target, status, err := h(r)
		u.audit(r, s, target, status)
		if err != nil {
			u.message(w, r, status, err.Error())
			return
		}
		http.Redirect(w, r, back(r), http.StatusSeeOther)
	})
}

// admitted checks an action's POST: from the UI's own origin, by a session
// holding jobs:admin, with its CSRF token; else it answers why not.
func (u *UI) admitted(w http.ResponseWriter, r *http.Request) (session, bool) {
	if why := auth.Foreign(r, u.LocalOnly && u.Auth == nil); why != "" {
		u.message(w, r, http.StatusForbidden, why)
		return session{}, false
	}
	s, ok := u.session(r)
	switch {
	case !ok:
		u.message(w, r, http.StatusUnauthorized, "Log in first.")
		return session{}, false
	case !validCSRF(s, r.PostFormValue("csrf")):
		u.message(w, r, http.StatusForbidden, "This form is not the UI's own (its CSRF token is missing or wrong): reload the page and try again.")
		return session{}, false
	case !s.caller.Has(auth.Admin):
		u.message(w, r, http.StatusForbidden, "Token "+s.caller.Name+" lacks scope jobs:admin.")
		return session{}, false
	}
	return s, true
}

// back is where an action goes back to: the form's page of the UI.
func back(r *http.Request) string { return uiPath(r.PostFormValue("back")) }

// uiPath is p if it is a page of the UI, else the overview: a form's or a
// login's way back never leaves the UI (no //host, no backslash, no line
// break).
func uiPath(p string) string {
	if !strings.HasPrefix(p, "/ui/") || strings.HasPrefix(p, "/ui//") || strings.ContainsAny(p, "\\\r\n") {
		return "/ui/"
	}
	return p
}

// audit writes the audit line of a UI action, as the API does of its calls.
func (u *UI) audit(r *http.Request, s session, target string, status int) {
	if u.Log == nil {
		return
	}
	who := s.caller.Name
	if u.Auth == nil {
		who = "anonymous"
	}
	outcome := "done"
	if status >= 400 {
		outcome = "refused"
	}
	if status >= 500 {
		outcome = "failed"
	}
	u.Log.InfoContext(r.Context(), "audit", "who", who, "action", "UI "+r.Method+" "+r.Pattern, "target", target, "status", status, "outcome", outcome)
}

// message answers a page saying msg.
func (u *UI) message(w http.ResponseWriter, r *http.Request, status int, msg string) {
	u.render(w, status, "message", view{Data: msg})
}

func (u *UI) render(w http.ResponseWriter, status int, page string, v view) {
	u.init()
	var b strings.Builder
	if err := u.pages[page].Execute(&b, v); err != nil {
		http.Error(w, "the page could not be drawn", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// roundDuration is d as a person reads it: to the second past a minute,
// to the tenth of a second below.
func roundDuration(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

package api

import (
	"net/http"
	"strings"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/service/internal/auth"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// endpoint is one method of a route: the scope a caller's token must
// hold ("" for none: the probes), and whether a call is audited (it
// changes the jobs).
type endpoint struct {
	scope auth.Scope
	audit bool
	h     http.HandlerFunc
}

func probe(h http.HandlerFunc) endpoint    { return endpoint{h: h} }
func reads(h http.HandlerFunc) endpoint    { return endpoint{scope: auth.Read, h: h} }
func computes(h http.HandlerFunc) endpoint { return endpoint{scope: auth.Submit, h: h} }
func submits(h http.HandlerFunc) endpoint  { return endpoint{scope: auth.Submit, audit: true, h: h} }
func admins(h http.HandlerFunc) endpoint   { return endpoint{scope: auth.Admin, audit: true, h: h} }

// The realm of the API's WWW-Authenticate challenges.
const realm = `Bearer realm="crewd"`

// authenticate finds the caller of r by its bearer token, or answers 401
// (RFC 6750: no token, or one that is malformed or unknown, which the
// answer never echoes).
func (a *API) authenticate(w http.ResponseWriter, r *http.Request) (auth.Caller, bool) {
	header := r.Header.Get("Authorization")
	if header == "" {
		w.Header().Set("WWW-Authenticate", realm)
		a.fail(w, r, http.StatusUnauthorized, "a token is required: Authorization: Bearer <token>")
		return auth.Caller{}, false
	}
	token, ok := auth.Bearer(header)
	var caller auth.Caller
	if ok {
		caller, ok = a.Auth.Tokens().Lookup(token)
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", realm+`, error="invalid_token"`)
		a.fail(w, r, http.StatusUnauthorized, "the bearer token is unknown or malformed")
		return auth.Caller{}, false
	}
	return caller, true
}

// forbid answers 403 to a caller whose token lacks the scope.
func (a *API) forbid(w http.ResponseWriter, r *http.Request, caller auth.Caller, scope auth.Scope) {
	w.Header().Set("WWW-Authenticate", realm+`, error="insufficient_scope", scope="`+string(scope)+`"`)
	a.fail(w, r, http.StatusForbidden, "token "+caller.Name+" lacks scope "+string(scope)+" (it holds: "+caller.Scopes()+")")
}

// serve runs the endpoint of r's method among methods, once its caller
// is known (a token is asked of every method of a guarded route, one with
// a scope, before the method is looked at) and holds the endpoint's scope;
// a call of an audited endpoint, refused or not, writes an audit line.
func (a *API) serve(w http.ResponseWriter, r *http.Request, route, allow string, guard bool, methods map[string]endpoint) {
	e, found := methods[r.Method]
	if !found && r.Method == http.MethodHead {
		e, found = methods[http.MethodGet]
	}
	caller, known := auth.Caller{}, false
	if found && e.audit {
		defer func() { a.audit(w, r, route, caller, known) }()
	}
	if guard {
		if why := a.foreign(r); why != "" {
			a.fail(w, r, http.StatusForbidden, why)
			return
		}
	}
	if a.Auth != nil && guard {
		if caller, known = a.authenticate(w, r); !known {
			return
		}
		r = r.WithContext(auth.WithCaller(r.Context(), caller))
		trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("crewd.caller", caller.Name))
	}
	switch {
	case !found:
		w.Header().Set("Allow", allow)
		a.fail(w, r, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; allowed: "+allow)
	case known && e.scope != "" && !caller.Has(e.scope):
		a.forbid(w, r, caller, e.scope)
	default:
		e.h(w, r)
	}
}

// guarded reports whether a route asks for a token: one of its methods
// has a scope.
func guarded(methods map[string]endpoint) bool {
	for _, e := range methods {
		if e.scope != "" {
			return true
		}
	}
	return false
}

// audit writes the audit line of a call that changes jobs: who (the
// token's name; "anonymous" where crewd serves without tokens, "-" for no
// token or an unknown one), what (the method and the route), which job,
// periodic job or queue, and the outcome (the status). Never the token.
func (a *API) audit(w http.ResponseWriter, r *http.Request, route string, caller auth.Caller, known bool) {
	if a.Log == nil {
		return
	}
	who := caller.Name
	switch {
	case a.Auth == nil:
		who = "anonymous"
	case !known:
		who = "-"
	}
	status := 0
	if sw, ok := w.(*statusWriter); ok {
		status = sw.code
	}
	args := []any{"who", who, "action", r.Method + " " + route, "status", status, "outcome", outcome(status), "request_id", requestID(r.Context())}
	if id := r.PathValue("id"); jobs.ValidID(id) {
		args = append(args, "job", id)
	} else if id != "" {
		args = append(args, "job", quoteShort(id))
	} else if loc, ok := strings.CutPrefix(w.Header().Get("Location"), "/v1/jobs/"); ok {
		args = append(args, "job", loc)
	}
	if name := r.PathValue("name"); name != "" {
		args = append(args, "target", quoteShort(name))
	}
	a.Log.InfoContext(r.Context(), "audit", args...)
}

func outcome(status int) string {
	switch {
	case status >= 500:
		return "failed"
	case status >= 400:
		return "refused"
	}
	return "done"
}

// submitter is the name a job submitted by r records: its token's, or ""
// where crewd serves without tokens.
func submitter(r *http.Request) string {
	c, _ := auth.CallerOf(r.Context())
	return c.Name
}

// foreign says why r is refused as a browser's request from another
// site, or to a name not this machine's (auth.Foreign); "" when it is not.
func (a *API) foreign(r *http.Request) string {
	return auth.Foreign(r, a.Auth == nil && a.LocalOnly)
}

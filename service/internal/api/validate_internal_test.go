package api

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Validated is h with every answer checked against openapi.json (through
// kin-openapi): its status among the operation's, its body of the schema
// its status and content type name. A mismatch fails t, naming the
// request, the answer and the validator's reason. An answer to a path or
// method the document has no operation for (a 404 or 405 of the API's own)
// is not checked: TestOpenAPIDescribesEveryRoute holds the routes. The
// API's tests serve through it, so that the document and the answers they
// receive cannot drift apart.
func Validated(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	router := openapiRouter(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		if err := validAnswer(router, r, rec.status, rec.Header(), rec.body.Bytes()); err != nil {
			t.Errorf("%s %s: %d %s: not as openapi.json says: %v", r.Method, clip(r.URL.RequestURI()), rec.status, clip(rec.body.String()), clip(err.Error()))
		}
	})
}

// openapiRouter loads openapi.json and makes its router; a document that
// does not load or validate fails t.
func openapiRouter(t testing.TB) routers.Router {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapiDoc)
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid document: %v", err)
	}
	// Routes are matched on the path alone, whatever the host the test
	// serves on.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("openapi.json's routes: %v", err)
	}
	return router
}

// validAnswer checks an answer to r; nil for a route the document does not
// have.
func validAnswer(router routers.Router, r *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := router.FindRoute(r)
	if err != nil || route.Operation == nil || route.Method != r.Method || slices.Contains(slices.Collect(maps.Values(params)), "") {
		return nil // no operation: the legacy router takes /v1/jobs for /v1/jobs/{id} with an empty id
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: status, Header: header, Body: ioNopCloser(body),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	return openapi3filter.ValidateResponse(r.Context(), in)
}

// recorder passes an answer on and keeps its status and body.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func ioNopCloser(b []byte) nopCloser { return nopCloser{bytes.NewReader(b)} }

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// contract is openapi.json as kin-openapi reads it, valid OpenAPI 3.1,
// and a router that finds a request's operation in it on any host (the
// tests' servers listen on ports of their own).
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

var loadContract = sync.OnceValues(func() (*contract, error) {
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.json")
	if err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.json is not a valid OpenAPI document: %w", err)
	}
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi.json: routes: %w", err)
	}
	return &contract{doc: doc, router: router}, nil
})

// checkAnswers wraps h so that every answer it writes is held to
// openapi.json: an operation's answer must have a status the operation
// names, its content type and a body its schema accepts; an answer to a
// request no operation describes (an unknown path, a wrong method), if
// JSON, must be the document's Error. Each answer that is not fails t,
// naming the request, the status and the validator's reason.
func checkAnswers(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	var inFlight sync.WaitGroup
	// The answers are held before the test ends: a handler still running
	// when its client has returned (or a server closed later) is waited for.
	t.Cleanup(inFlight.Wait)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		defer inFlight.Done()
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if err := c.check(r, rec.reply()); err != nil {
			t.Errorf("openapi.json: %s %s: %d: %v", r.Method, short(r.URL.RequestURI()), rec.code, err)
		}
	})
}

// reply is what a client received: status, headers, body.
type reply struct {
	code   int
	header http.Header
	body   []byte
}

// check says why a, the answer to r, does not validate, or nil.
func (c *contract) check(r *http.Request, a reply) error {
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		if r.Method == http.MethodHead || a.header.Get("Content-Type") != "application/json" {
			return nil // no body, or not the API's: the UI's pages
		}
		return c.doc.Components.Schemas["Error"].Value.VisitJSON(decode(a.body), openapi3.EnableJSONSchema2020())
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
		Status:                 a.code,
		Header:                 a.header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(a.body)
	return openapi3filter.ValidateResponse(r.Context(), in)
}

// short is a request's URI cut to a length a failure can print.
func short(uri string) string {
	if len(uri) <= 100 {
		return uri
	}
	return fmt.Sprintf("%s… (%d bytes)", uri[:80], len(uri))
}

// decode is a JSON body as a value, or the body as a string if it is not
// JSON (which the Error schema, an object, does not accept).
func decode(body []byte) any {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return string(body)
	}
	return v
}

// recorder passes an answer on to the client and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	code   int
	header http.Header
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code, r.header = code, r.Header().Clone()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.WriteHeader(http.StatusOK)
	}
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (read
// deadlines, flushes).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// reply is what the client received: the status and headers, with the
// Content-Type net/http sniffs when the handler set none, and the body.
func (r *recorder) reply() reply {
	if r.code == 0 {
		r.WriteHeader(http.StatusOK)
	}
	a := reply{code: r.code, header: r.header, body: r.body.Bytes()}
	if _, set := a.header["Content-Type"]; !set && len(a.body) > 0 {
		a.header.Set("Content-Type", http.DetectContentType(a.body))
	}
	return a
}

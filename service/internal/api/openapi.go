package api

import (
	_ "embed"
	"net/http"
)

// openapiDoc describes the API (OpenAPI 3.1), for a client written in
// another language; TestOpenAPIDescribesEveryRoute holds it to the routes.
//
//go:embed openapi.json
var openapiDoc []byte

// openapi answers GET /v1/openapi.json: the document, to anyone (it says
// what the routes are, which the README says too).
func (a *API) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapiDoc)
}

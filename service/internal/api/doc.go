// Package api is crewd's HTTP API: the online mode (POST /v1/factorial, a
// group of tasks per request), the background mode (POST /v1/jobs, GET
// /v1/jobs/{id}) and the probes. Every error is a JSON body
// {"error": "..."} with the status that says what to do about it.
package api

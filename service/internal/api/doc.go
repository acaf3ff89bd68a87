// Package api is crewd's HTTP API: the online mode (POST /v1/factorial, a
// group of tasks per request), the background mode (POST /v1/jobs, GET and
// DELETE /v1/jobs/{id}, GET /v1/jobs and /v1/jobs/counts, POST
// /v1/jobs/{id}/retry) and the probes. Every error is a JSON body
// {"error": "..."} with the status that says what to do about it.
package api

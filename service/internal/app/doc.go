// Package app wires crewd together and runs it: listeners bound first (a
// port in use is a start-up error), the pool, the jobs (the embedded NATS
// server or a shared one, the stream, the bucket and the job source; or
// the in-memory store), the API, the admin listener, then the stop
// sequence a pod needs on SIGTERM.
package app

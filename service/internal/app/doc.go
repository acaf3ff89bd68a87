// Package app wires crewd together and runs it: listeners bound first (a
// port in use is a start-up error), the pool, the API, the admin listener,
// then the stop sequence a pod needs on SIGTERM.
package app

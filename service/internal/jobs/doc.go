// Package jobs is crewd's background mode: a job is a long task with a
// timeout, accepted with an id (202) and looked up by it. The Runner
// interface is what the HTTP API needs, so that a durable source can take
// the pool's place without the API changing.
package jobs

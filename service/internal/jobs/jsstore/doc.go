// Package jsstore is crewd's durable job store, on NATS JetStream: a job
// is a message in a stream, its record a key in a key-value bucket, and a
// natsjs.Source runs the jobs on the pool through Runner.Handle, at least
// once, on whichever crewd pulls them. Durable holds all of its NATS
// setup: the embedded server (when no URL is given), the connection and
// its handlers, the stream, consumer and bucket found or created, the
// store's health for /readyz and /healthz, its metrics, and the order of
// its close.
package jsstore

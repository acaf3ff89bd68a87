// Package natsd is an embedded NATS server: JetStream with its file
// store in a data directory, run inside the process so that the durable
// job path needs nothing installed. A program talks to it over an in-process
// connection; it listens on a TCP address only when asked to (for the nats
// CLI or a second process). The data directory is locked while the server
// runs, so that two processes never share one store.
package natsd

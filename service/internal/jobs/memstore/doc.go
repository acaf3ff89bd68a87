// Package memstore is crewd's in-memory job store (-nats-url=off): a
// Runner that runs each job as a long task on the crew pool, with its
// record in a Store bounded by count and age. Nothing survives the
// process; a full queue or a full store refuses a job rather than lose it.
package memstore

// Package load drives a running crewd: factorial requests, background
// jobs or both, for a duration or a count of requests, at a rate or as
// fast as a number of concurrent clients allow. It shows progress while it
// runs and reports throughput, latency percentiles and status counts.
package load

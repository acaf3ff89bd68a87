// Package natsprom exports a natsjs.Source's counts and its consumer's lag
// to Prometheus, beside the pool's own collector (package
// github.com/crew-go/crew/prom): register both.
//
//	collector, err := natsprom.NewCollector(src)
//	prometheus.MustRegister(collector)
//
// The metrics, each with the labels stream and consumer:
//
//	natsjs_messages_received_total     counter  messages delivered to the Source
//	natsjs_messages_redelivered_total  counter  of those, deliveries after the first
//	natsjs_messages_total{outcome}     counter  acked, naked, termed, handed_back, unavailable, lease_lost
//	natsjs_dead_letters_total          counter  messages published to the dead-letter subject
//	natsjs_heartbeats_total            counter  lease renewals (InProgress) sent
//	natsjs_pulls_total                 counter  pull requests sent (a clustered consumer replicates each twice)
//	natsjs_messages_held{state}        gauge    held now: waiting, resting, running
//	natsjs_consumer_lag                gauge    NumPending + NumAckPending, asked of the server
//
// The lag is one request to the server per scrape, bounded by
// WithLagTimeout; when it fails the scrape goes on without it.
package natsprom

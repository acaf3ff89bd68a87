package natsprom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/natsjs"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultLagTimeout bounds the request for the consumer's lag in a scrape.
const DefaultLagTimeout = time.Second

// ErrInvalidOption is wrapped by the error NewCollector returns for a bad
// argument or option.
var ErrInvalidOption = errors.New("natsprom: invalid option")

// Collector is a prometheus.Collector over one natsjs.Source: each scrape
// takes one Stats snapshot and, unless WithoutLag, asks the server for the
// consumer's lag.
type Collector struct {
	src        *natsjs.Source
	lagTimeout time.Duration

	received, redelivered, outcomes, deadLetters, heartbeats, pulls, held, window, lag *prometheus.Desc
}

// Option configures NewCollector. Options are created by the With...
// functions of this package only.
type Option interface {
	apply(*Collector) error
}

type optionFunc func(*Collector) error

func (f optionFunc) apply(c *Collector) error { return f(c) }

// WithLagTimeout bounds the request for the lag in each scrape; it must be
// positive. The default is DefaultLagTimeout.
func WithLagTimeout(d time.Duration) Option {
	return optionFunc(func(c *Collector) error {
		if d <= 0 {
			return fmt.Errorf("%w: lag timeout %v", ErrInvalidOption, d)
		}
		c.lagTimeout = d
		return nil
	})
}

// WithoutLag leaves natsjs_consumer_lag out: scrapes send no request to the
// server (KEDA's nats-jetstream trigger, or the server's own exporter, may
// watch the lag already).
func WithoutLag() Option {
	return optionFunc(func(c *Collector) error {
		c.lagTimeout = 0
		return nil
	})
}

// NewCollector returns a collector over src.
func NewCollector(src *natsjs.Source, opts ...Option) (*Collector, error) {
	if src == nil {
		return nil, fmt.Errorf("%w: nil Source", ErrInvalidOption)
	}
	c := &Collector{src: src, lagTimeout: DefaultLagTimeout}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		if err := o.apply(c); err != nil {
			return nil, err
		}
	}
	labels := prometheus.Labels{"stream": src.Stream(), "consumer": src.Consumer()}
	desc := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc("natsjs_"+name, help, variable, labels)
	}
	c.received = desc("messages_received_total", "Messages delivered to the Source.")
	c.redelivered = desc("messages_redelivered_total", "Messages delivered to the Source that had been delivered before.")
	c.outcomes = desc("messages_total", "Messages settled, by outcome: acked, naked (a failure, retried after a backoff), termed (after the last attempt), handed_back (naked without delay by a stop), unavailable (run again after a short delay on the same delivery: the handler reported an outage of what it needs, not a failure), lease_lost.", "outcome")
	c.deadLetters = desc("dead_letters_total", "Messages published to the dead-letter subject.")
	c.heartbeats = desc("heartbeats_total", "Lease renewals (InProgress) sent.")
	c.pulls = desc("pulls_total", "Pull requests sent (each costs a clustered consumer two replicated writes): messages_received_total over it is how well pulls batch.")
	c.held = desc("messages_held", "Messages held now, by state: waiting (not started), resting (waiting out an outage's delay before it runs again) or running (started: its handler running, or its ack awaiting the server's confirmation).", "state")
	c.window = desc("window", "The pull window of the last pull decision: messages not started the Source may hold beyond the pool's free slots (adaptive unless fixed by WithWindow).")
	c.lag = desc("consumer_lag", "The consumer's lag on the server: messages not yet delivered plus messages delivered and not yet acked.")
	return c, nil
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.received
	ch <- c.redelivered
	ch <- c.outcomes
	ch <- c.deadLetters
	ch <- c.heartbeats
	ch <- c.pulls
	ch <- c.held
	ch <- c.window
	if c.lagTimeout > 0 {
		ch <- c.lag
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	counter := func(d *prometheus.Desc, v uint64, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), label...)
	}
	counter(c.received, s.Received)
	counter(c.redelivered, s.Redelivered)
	counter(c.outcomes, s.Acked, "acked")
	counter(c.outcomes, s.Naked, "naked")
	counter(c.outcomes, s.Termed, "termed")
	counter(c.outcomes, s.HandedBack, "handed_back")
	counter(c.outcomes, s.Unavailable, "unavailable")
	counter(c.outcomes, s.LeasesLost, "lease_lost")
	counter(c.deadLetters, s.DeadLettered)
	counter(c.heartbeats, s.Heartbeats)
	counter(c.pulls, s.Pulls)
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(s.Unstarted), "waiting")
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(s.Resting), "resting")
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(max(0, s.InFlight-s.Unstarted-s.Resting)), "running")
	ch <- prometheus.MustNewConstMetric(c.window, prometheus.GaugeValue, float64(s.Window))
	if c.lagTimeout > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.lagTimeout)
		defer cancel()
		if lag, err := c.src.Lag(ctx); err == nil {
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(lag))
		}
	}
}

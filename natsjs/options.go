package natsjs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults used by New when the matching option is not given.
const (
	// DefaultBackoffBase and DefaultBackoffMax bound the delay of a nak:
	// base·2^(attempt-1), capped at max, with jitter.
	DefaultBackoffBase = time.Second
	DefaultBackoffMax  = time.Minute
	// DefaultHeartbeat is the fraction of AckWait after which a held
	// message's lease is renewed with InProgress.
	DefaultHeartbeat = 0.5
	// DefaultPullExpiry is how long one pull request waits on the server for
	// messages: an idle Source sends about one request per expiry.
	DefaultPullExpiry = time.Second
	// DefaultTaskName names the pool tasks that run messages.
	DefaultTaskName = "natsjs"
	// DefaultUnavailableDelay is how long a message whose handler
	// reported an outage (Unavailable) waits before it runs again: short
	// and fixed, since the message did not fail and an outage of a
	// replicated store lasts the few seconds of a leader election.
	DefaultUnavailableDelay = time.Second
)

// Option configures a Source. Options are created by the With... functions
// of this package only.
type Option interface {
	apply(*options) error
}

type optionFunc func(*options) error

func (f optionFunc) apply(o *options) error { return f(o) }

type options struct {
	window      int
	backoffBase time.Duration
	backoffMax  time.Duration
	unavailable time.Duration
	deadJS      jetstream.JetStream
	deadSubject string
	maxDeliver  int // 0: the consumer's
	heartbeat   float64
	doubleAck   bool
	logger      *slog.Logger
	taskName    string
	pullExpiry  time.Duration
	conn        *nats.Conn
	journal     string
	recovered   func(context.Context, Recovered)
	lanes       []jetstream.Consumer
	ranks       []int // of each lane: lanes of one rank take turns (WithLaneGroups)
}

func defaultOptions() options {
	return options{
		window:      -1, // adaptive: see window.go
		backoffBase: DefaultBackoffBase,
		unavailable: DefaultUnavailableDelay,
		backoffMax:  DefaultBackoffMax,
		heartbeat:   DefaultHeartbeat,
		taskName:    DefaultTaskName,
		pullExpiry:  DefaultPullExpiry,
	}
}

// WithWindow fixes how many unstarted messages the Source may hold beyond
// the pool's free slots, in place of the adaptive window (window.go: the
// rate of starts times a pull's round trip, twice over, from MinWindow to
// MaxWindowFactor times the pool's bound). It must be from 0 to 10,000.
// Zero pulls only for free slots, at the price of a round trip before each
// task can start.
func WithWindow(n int) Option {
	return optionFunc(func(o *options) error {
		if n < 0 || n > 10_000 {
			return fmt.Errorf("%w: window %d, want 0..10000", ErrInvalidOption, n)
		}
		o.window = n
		return nil
	})
}

// WithBackoff sets the delay of the nak that follows a failure: base doubled
// for every attempt after the first, capped at max, with up to half of it
// taken off at random so that messages failing together do not come back
// together. base must be positive and max at least base.
func WithBackoff(base, max time.Duration) Option {
	return optionFunc(func(o *options) error {
		if base <= 0 || max < base {
			return fmt.Errorf("%w: backoff base %v max %v, want 0 < base <= max", ErrInvalidOption, base, max)
		}
		o.backoffBase, o.backoffMax = base, max
		return nil
	})
}

// WithUnavailableDelay sets how long a message whose handler returned an
// error made by Unavailable waits before it runs again; it must be
// positive. The default is DefaultUnavailableDelay.
func WithUnavailableDelay(d time.Duration) Option {
	return optionFunc(func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: unavailable delay %v, want > 0", ErrInvalidOption, d)
		}
		o.unavailable = d
		return nil
	})
}

// WithDeadLetter makes a message whose last attempt failed be published,
// through js, to subject (its payload, its headers and the Crew-* headers
// saying why) before it is termed. Without it the message is termed with
// its reason and nothing else. The publish is acknowledged by a stream: if
// it fails, the message is not termed.
func WithDeadLetter(js jetstream.JetStream, subject string) Option {
	return optionFunc(func(o *options) error {
		if js == nil || subject == "" {
			return fmt.Errorf("%w: dead letter needs a JetStream and a subject", ErrInvalidOption)
		}
		if err := checkSubject(subject); err != nil {
			return fmt.Errorf("%w: dead letter subject %.40q: %v", ErrInvalidOption, subject, err)
		}
		o.deadJS, o.deadSubject = js, subject
		return nil
	})
}

// WithMaxDeliver sets the attempt after whose failure a message is termed
// (and dead-lettered). It must be at least 1. The default is the consumer's
// MaxDeliver; with neither, messages are retried for ever.
func WithMaxDeliver(n int) Option {
	return optionFunc(func(o *options) error {
		if n < 1 {
			return fmt.Errorf("%w: max deliver %d, want >= 1", ErrInvalidOption, n)
		}
		o.maxDeliver = n
		return nil
	})
}

// WithHeartbeat sets the fraction of the consumer's AckWait after which the
// lease of a held message is renewed (InProgress), and renewed again every
// such fraction while it is held. It must be in (0, 0.9]. The default is
// DefaultHeartbeat.
func WithHeartbeat(fraction float64) Option {
	return optionFunc(func(o *options) error {
		if !(fraction > 0 && fraction <= 0.9) {
			return fmt.Errorf("%w: heartbeat fraction %v, want (0, 0.9]", ErrInvalidOption, fraction)
		}
		o.heartbeat = fraction
		return nil
	})
}

// WithDoubleAck makes every ack wait for the server's confirmation
// (DoubleAck): a message counted acked is not redelivered, and Run and
// Shutdown return only once every ack is confirmed. The wait is off the
// pool's slot (the next message starts at the handler's return), but the
// message stays held, in Stats and against the window, until the answer
// comes: a round trip per message, not spent by the pool.
func WithDoubleAck() Option {
	return optionFunc(func(o *options) error {
		o.doubleAck = true
		return nil
	})
}

// WithLogger makes the Source log failures, dead letters, hand-backs, lost
// leases and pull errors. The default logs nothing.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		o.logger = l
		return nil
	})
}

// WithTaskName names the pool tasks that run messages (crew.Named), in the
// pool's metrics and logs. The default is DefaultTaskName.
func WithTaskName(name string) Option {
	return optionFunc(func(o *options) error {
		o.taskName = name
		return nil
	})
}

// WithPullExpiry sets how long one pull request waits on the server for
// messages; it must be from 100 ms to 1 minute. A longer expiry costs fewer
// idle requests, and a pull lost in a server restart goes unnoticed for
// longer; a stop lets a pull run out for at most DefaultPullExpiry, then
// cancels it. The default is DefaultPullExpiry.
func WithPullExpiry(d time.Duration) Option {
	return optionFunc(func(o *options) error {
		if d < 100*time.Millisecond || d > time.Minute {
			return fmt.Errorf("%w: pull expiry %v, want 100ms..1m", ErrInvalidOption, d)
		}
		o.pullExpiry = d
		return nil
	})
}

// WithConn gives the Source the connection its consumer uses, so that it can
// see the connection's state: while disconnected it sends no pull (a pull
// buffered by the client and replayed after the reconnect would deliver to
// an inbox already given up, and those messages would wait out AckWait),
// and a lease renewal sent while disconnected does not count, so that a
// partition longer than AckWait cancels the handlers whose messages the
// server has given to someone else. Without it, a renewal counts once the
// client library accepted it, and a lease is only found lost when the
// connection is closed.
func WithConn(nc *nats.Conn) Option {
	return optionFunc(func(o *options) error {
		if nc == nil {
			return fmt.Errorf("%w: nil connection", ErrInvalidOption)
		}
		o.conn = nc
		return nil
	})
}

// WithJournal notes the deliveries the Source holds in the file at path
// (created if missing; its directory must exist), so that a process
// killed while holding messages hands them back at its next start, when
// Run begins, rather than leave them to wait out their AckWait (journal.go
// says what it promises). Give each Source a path of its own that outlives
// the process (the embedded server's data directory, a pod's volume); New
// refuses a journal another Source holds. It needs WithConn.
func WithJournal(path string) Option {
	return optionFunc(func(o *options) error {
		if path == "" {
			return fmt.Errorf("%w: empty journal path", ErrInvalidOption)
		}
		o.journal = path
		return nil
	})
}

// WithRecovered has fn told of each delivery a killed Source left held in
// the journal (WithJournal), when Run begins and before the Source hands
// it back, within recoveredWait each: Started says its run was
// interrupted, so that the handler's owner can count it (the jobs library
// counts it as an attempt). It does nothing without WithJournal.
func WithRecovered(fn func(ctx context.Context, r Recovered)) Option {
	return optionFunc(func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil recovered function", ErrInvalidOption)
		}
		o.recovered = fn
		return nil
	})
}

// MaxSubjectLen bounds a subject the Source publishes to. The server
// closes a connection whose control line (the subject, a reply inbox and
// the sizes) passes 4 KB, and nats.go does not reconnect after it.
const MaxSubjectLen = 1024

// checkSubject refuses a subject that cannot be published to: empty
// tokens, wildcards, white space or control characters, or one too long.
func checkSubject(subject string) error {
	if len(subject) > MaxSubjectLen {
		return fmt.Errorf("%d bytes, at most %d", len(subject), MaxSubjectLen)
	}
	for tok := range strings.SplitSeq(subject, ".") {
		if tok == "" {
			return errors.New("an empty token")
		}
		if tok == "*" || tok == ">" {
			return errors.New("a wildcard: a message is published to one subject")
		}
	}
	for _, c := range subject {
		if c <= ' ' || c == 0x7f {
			return errors.New("white space or a control character")
		}
	}
	return nil
}

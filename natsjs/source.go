package natsjs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A Handler runs one message. Returning nil acks it; an error naks it with
// backoff (or terms it after the last attempt, with a dead-letter publish);
// a panic is an error; Then leaves the rest to run off the pool. ctx ends
// when the pool cancels the task (timeout, hard shutdown) or when the
// message's lease can no longer be kept; its Err is then ErrLeaseLost,
// which wraps context.Canceled.
type Handler func(ctx context.Context, m *Msg) error

// Source pulls messages from a JetStream consumer and runs each as a task on
// a crew pool, holding no more unstarted messages than the pool's free slots
// plus a small window. Delivery is at-least-once: a message may run more than
// once (after a crash, a lost lease or a failed ack), so handlers must be
// idempotent.
//
// Create it with New, run it with Run, stop it with Shutdown. A Source may
// not be reused after it stopped. All its methods are safe for concurrent
// use.
type Source struct {
	pool       *crew.Pool
	cons       jetstream.Consumer
	h          Handler
	o          options
	ackWait    time.Duration
	maxDeliver int // 0: for ever
	// serverMaxDeliver is the consumer's MaxDeliver (0: none): after that
	// delivery the server gives the message to no one, nak or not.
	serverMaxDeliver int
	// maxBatch is the consumer's MaxRequestBatch (0: none): the server
	// refuses a pull asking for more, so no pull asks for more.
	maxBatch   int
	renewAfter time.Duration
	tickEvery  time.Duration
	stream     string
	consumer   string

	unstarted atomic.Int64  // received and not yet started or handed back, less the resting
	resting   atomic.Int64  // waiting out an outage's delay (settle.go): not against the pool's slots
	started   atomic.Uint64 // handlers started, for the window's rate
	window    *window       // how many unstarted messages to hold (window.go)
	lastStart atomic.Int64  // when a handler last started, unix nanoseconds
	stalled   atomic.Bool   // no start for an AckWait: no window (renewLeases)
	afters    atomic.Int64  // what handlers left with Then, running off the pool
	afterMax  atomic.Int64  // the pool's bound when last read: the most afters
	wake      chan struct{}
	done      chan struct{} // closed when Run returns
	running   atomic.Bool
	gaveUp    atomic.Bool // a Shutdown's context ended before the stop did
	c         counters

	idleWatch   time.Duration   // how long an idle lane's watch waits (lanes.go)
	fetchCtx    context.Context // ends the pulls in flight when Run returns
	cancelFetch context.CancelFunc
	idleCtx     context.Context // ends the idle lanes' watches at the stop
	cancelIdle  context.CancelFunc
	pullsEnded  chan struct{} // closed once stopping with no pull in flight
	endPulls    sync.Once

	mu           sync.Mutex
	head         *Msg // the held messages: received, not yet settled
	held         int
	requested    int // asked of the server, not yet received
	fetches      int // pull requests in flight
	stopping     bool
	submitCtx    context.Context // values for the tasks; ends at the stop
	cancelSubmit context.CancelFunc
	retryAt      time.Time // no pull before, after a pull error
	freed        int       // messages settled since the last pull decision
	threshold    int       // the credit that sends a pull while one is in flight
	lastWindow   int       // the window of the last pull decision, for Stats
	backlog      bool      // the last pull came back full
	fatal        error
	scratch      []*Msg // renewLeases' list, reused

	// lanes are the consumers a Source takes from in order, its own among
	// them (WithLanes); nil for its own alone (lanes.go).
	lanes    []jetstream.Consumer
	ranks    []int  // of each lane, in order; lanes of one rank take turns
	turn     int    // the sweeps made: whose turn it is in each rank (lanes.go)
	grouped  []bool // a lane shares its rank with others (WithLaneGroups): its watches ask for more (maxWatch)
	watched  []bool // a lane has a watch waiting on the server: found empty
	watching int    // watches in flight, each asking one message
	sweeps   int    // sweeps in flight

	journal   *journal // WithJournal's; nil without
	noted     []note   // the deliveries a killed Source left noted held
	notedBeat time.Time
}

// New returns a Source that pulls from consumer and runs each message as a
// task on pool. The consumer must be a pull consumer with explicit acks; its
// AckWait sets the lease and its MaxDeliver the last attempt (unless
// WithMaxDeliver says otherwise). New starts nothing; Run does.
func New(pool *crew.Pool, consumer jetstream.Consumer, h Handler, opts ...Option) (*Source, error) {
	if pool == nil || consumer == nil || h == nil {
		return nil, fmt.Errorf("%w: New needs a pool, a consumer and a handler", ErrInvalidOption)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := opt.apply(&o); err != nil {
			return nil, err
		}
	}
	info := consumer.CachedInfo()
	if info == nil {
		return nil, fmt.Errorf("%w: consumer without info", ErrInvalidOption)
	}
	if info.Config.AckPolicy != jetstream.AckExplicitPolicy {
		return nil, fmt.Errorf("%w: consumer %q acks %v; a Source needs explicit acks", ErrInvalidOption, info.Name, info.Config.AckPolicy)
	}
	s := &Source{
		pool:       pool,
		cons:       consumer,
		h:          h,
		o:          o,
		ackWait:    info.Config.AckWait,
		stream:     info.Stream,
		consumer:   info.Name,
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		pullsEnded: make(chan struct{}),
	}
	if s.ackWait <= 0 {
		s.ackWait = 30 * time.Second // the server's default
	}
	s.serverMaxDeliver = max(0, info.Config.MaxDeliver)
	// The server refuses a pull over the consumer's MaxRequestBatch or
	// MaxRequestExpires (409): every pull would fail and nothing would run.
	s.maxBatch = max(0, info.Config.MaxRequestBatch)
	if e := info.Config.MaxRequestExpires; e > 0 && s.o.pullExpiry > e {
		s.o.pullExpiry = e
	}
	s.maxDeliver = s.serverMaxDeliver
	if o.maxDeliver > 0 && (s.maxDeliver == 0 || o.maxDeliver < s.maxDeliver) {
		s.maxDeliver = o.maxDeliver
	}
	if err := s.checkLanes(o.lanes, o.ranks); err != nil {
		return nil, err
	}
	s.afterMax.Store(int64(pool.Stats().MaxWorkers))
	s.window = newWindow(o.window, s.ackWait)
	s.renewAfter = time.Duration(float64(s.ackWait) * o.heartbeat)
	// A renewal is sent by the first tick after it is due: a tick must
	// come well within what is left of AckWait after renewAfter, or a
	// heartbeat fraction near 0.9 lets the lease lapse before its renewal.
	s.tickEvery = min(100*time.Millisecond, max(time.Millisecond, min(s.renewAfter, s.ackWait-s.renewAfter)/4))
	s.fetchCtx, s.cancelFetch = context.WithCancel(context.Background())
	s.idleCtx, s.cancelIdle = context.WithCancel(s.fetchCtx)
	if o.journal != "" {
		if o.conn == nil {
			return nil, fmt.Errorf("%w: WithJournal needs WithConn, to hand back what a killed Source held", ErrInvalidOption)
		}
		var err error
		if s.journal, s.noted, s.notedBeat, err = openJournal(o.journal); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
		}
	}
	return s, nil
}

// Run pulls and runs messages until ctx ends or Shutdown is called; it
// returns nil after a stop, or the error that stopped it (the connection
// closed). The end of ctx stops the Source as Shutdown does: Run returns
// once every message it received has been acked, naked or termed. ctx also
// lends its values to the handlers' contexts. A second call returns
// ErrRunning.
func (s *Source) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer close(s.done)
	defer s.cancelFetch()
	s.mu.Lock()
	if s.stopping { // Shutdown came first
		s.mu.Unlock()
		return nil
	}
	s.submitCtx, s.cancelSubmit = context.WithCancel(ctx)
	s.mu.Unlock()
	s.lastStart.Store(time.Now().UnixNano())
	if s.journal != nil {
		s.recover()
		defer s.closeJournal()
	}
	stopWatch := context.AfterFunc(ctx, s.beginStop)
	defer stopWatch()

	tick := time.NewTicker(s.tickEvery)
	defer tick.Stop()
	for {
		s.mu.Lock()
		stopping, pulling, held := s.stopping, s.fetches > 0, s.held
		s.mu.Unlock()
		if stopping && !pulling {
			if held == 0 {
				break
			}
			s.reclaim()
		}
		if !stopping {
			s.pull()
		}
		select {
		case <-s.wake:
		case now := <-tick.C:
			s.renewLeases(now)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

// Shutdown stops pulling, lets the pulls in flight run out (for at most a
// second, then ends them), hands every message not yet started back at
// once (nak without delay, so that another consumer gets it now rather
// than after AckWait), and waits until every message received is acked,
// naked or termed and Run has returned. Running handlers
// finish, are cancelled or are handed back as the pool's own Shutdown mode
// decides: call the pool's Shutdown after or beside it. When ctx ends
// first, Shutdown returns ctx.Err() and the stop goes on; once the pool has
// stopped too, what still runs off it for a message (what a handler left
// with Then) is let go: its context ends with ErrLeaseLost and its lease is
// renewed no more, so that it cannot hold the message for ever. Called
// with a handler's context (or one made from it), Shutdown begins the stop
// and returns ErrCalledFromHandler at once. It is safe to call more than
// once; before Run it makes Run return at once.
func (s *Source) Shutdown(ctx context.Context) error {
	s.beginStop()
	if ctx.Value(sourceKey{}) == s {
		return ErrCalledFromHandler
	}
	if !s.running.Load() {
		return nil
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		s.gaveUp.Store(true)
		return ctx.Err()
	}
}

// letGo ends the contexts of what runs off the pool for held messages,
// which stops their renewals: a stop gave up on them and the pool stopped.
// Called by Run only (renewLeases).
func (s *Source) letGo() {
	s.mu.Lock()
	var off []*msgContext
	for m := s.head; m != nil; m = m.next {
		if mc := m.ctx.Load(); mc != nil && mc.off {
			off = append(off, mc)
		}
	}
	s.mu.Unlock()
	for _, mc := range off {
		if mc.cancelWith(ErrLeaseLost) {
			s.c.leasesLost.Add(1)
		}
	}
}

// beginStop stops pulling; Run's loop hands back what waits once the
// pulls in flight have run out (pull.go, rule 3; reclaim).
func (s *Source) beginStop() {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	s.stopping = true
	if s.cancelSubmit != nil {
		s.cancelSubmit()
	}
	ended := s.fetches == 0
	s.mu.Unlock()
	s.cancelIdle() // rule 3: nothing comes to them sooner for waiting
	if ended {
		s.endPulls.Do(func() { close(s.pullsEnded) })
	} else {
		time.AfterFunc(maxPullWait, s.cancelFetch)
	}
	s.signal()
}

// reclaim hands back every held message not started, once no pull is in
// flight. Why not before: a nak sent while one of our pulls still waits on
// the server lets the server give the message straight back to us, and
// each such round costs the message a delivery attempt. A message at the
// server's last delivery is not handed back (the server would never
// deliver it again): it stays with the pool, and if the pool stopped
// without running it, it is dead-lettered. Called by Run only.
func (s *Source) reclaim() {
	s.mu.Lock()
	var back []*Msg
	for m := s.head; m != nil; m = m.next {
		if m.state.Load() == waiting {
			back = append(back, m)
		}
	}
	s.mu.Unlock()
	for _, m := range back {
		if !s.lastDelivery(m) {
			s.handBack(m, "stopping")
			continue
		}
		if task := m.task.Load(); task != nil && !task.State().Terminal() {
			continue // the pool may still run it
		}
		if m.resting.Load() && !s.pool.Stats().Closed {
			continue // it waits out its outage's delay, as outside a stop
		}
		// Not yet a task, waiting to run again after an outage, or
		// dropped by the pool's stop: one more chance to run.
		t, err := s.pool.TrySubmit(m.run, crew.Named(s.o.taskName))
		if err == nil {
			m.task.Store(t)
			continue
		}
		if errors.Is(err, crew.ErrQueueFull) {
			continue // the pool runs: try again on the next round
		}
		if m.state.CompareAndSwap(waiting, handedBack) {
			s.unwait(m)
			if s.deadLetter(m, errNotRunAtLastDelivery) {
				s.release(m)
			}
		}
	}
}

// lastDelivery reports whether the server will not deliver m again.
func (s *Source) lastDelivery(m *Msg) bool {
	return s.serverMaxDeliver > 0 && m.attempt >= s.serverMaxDeliver
}

var errNotRunAtLastDelivery = errors.New("natsjs: not run: the Source stopped at the message's last delivery")

// signal wakes Run's loop; wakes coalesce.
func (s *Source) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// link adds m to the held list. s.mu must be held.
func (s *Source) link(m *Msg) {
	m.next = s.head
	if s.head != nil {
		s.head.prev = m
	}
	s.head = m
	s.held++
}

// release removes a settled m from the held list and wakes Run: a slot may
// have come free.
func (s *Source) release(m *Msg) {
	s.mu.Lock()
	if m.prev != nil {
		m.prev.next = m.next
	} else if s.head == m {
		s.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	}
	m.prev, m.next = nil, nil
	if m.again != nil {
		m.again.Stop()
		m.again = nil
	}
	s.held--
	if s.journal != nil {
		s.noteJournal('-', m.raw.Reply())
	}
	// Wake Run only when a pull may follow: none in flight (but the
	// watches of idle lanes, lanes.go), enough slots freed since its last
	// decision to reach the threshold, or a stop to finish. Waking it for
	// every message would cost a pool snapshot each.
	s.freed++
	wake := s.fetches-s.watching == 0 || s.freed >= s.threshold || s.stopping
	s.mu.Unlock()
	if wake {
		s.signal()
	}
}

// unwait counts m out of the waiting messages, once a compare-and-swap
// took it out of waiting: out of the resting ones if it was waiting out an
// outage's delay (settle.go), else out of the unstarted.
func (s *Source) unwait(m *Msg) {
	if m.resting.Swap(false) {
		s.resting.Add(-1)
	} else {
		s.unstarted.Add(-1)
	}
}

// handBackDelay is the delay of a hand-back's nak: as good as none, but a
// nak with a delay is written to the consumer's store (nats-server's
// processNak updates the delivered state), so the message comes back within
// the server's 10 ms pending check even after a server restart, where a
// plain nak only queues it in the server's memory and a restart leaves it
// to wait out its AckWait.
const handBackDelay = time.Nanosecond

// handBack naks a message that has not started, without delay, so that the
// server gives it to another consumer now. It does nothing when a worker
// started it first.
func (s *Source) handBack(m *Msg, why string) bool {
	if !m.state.CompareAndSwap(waiting, handedBack) {
		return false
	}
	s.unwait(m)
	if err := m.raw.NakWithDelay(handBackDelay); err != nil {
		s.logWarn("hand back failed; the server redelivers after AckWait", m, err)
	}
	s.c.handedBack.Add(1)
	if s.o.logger != nil && s.o.logger.Enabled(context.Background(), slog.LevelDebug) {
		s.o.logger.Debug("natsjs: message handed back", "why", why, "stream_seq", m.seq, "attempt", m.attempt)
	}
	s.release(m)
	return true
}

// Stream returns the name of the consumer's stream.
func (s *Source) Stream() string { return s.stream }

// Consumer returns the consumer's name.
func (s *Source) Consumer() string { return s.consumer }

// Lag returns the consumer's lag (its lanes' together) as the server sees it now: messages not yet
// delivered plus messages delivered and not yet acked.
func (s *Source) Lag(ctx context.Context) (uint64, error) {
	lanes := s.lanes
	if lanes == nil {
		lanes = []jetstream.Consumer{s.cons}
	}
	var lag uint64
	for _, c := range lanes {
		info, err := c.Info(ctx)
		if err != nil {
			return 0, err
		}
		lag += info.NumPending + uint64(max(0, info.NumAckPending))
	}
	return lag, nil
}

func (s *Source) logWarn(msg string, m *Msg, err error) {
	if s.o.logger == nil {
		return
	}
	s.o.logger.Warn("natsjs: "+msg, "stream", s.stream, "consumer", s.consumer,
		"stream_seq", m.seq, "attempt", m.attempt, "error", err)
}

// isConnClosed tells a pull error that ends the Source.
func isConnClosed(err error) bool {
	return errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrConnectionClosed)
}

package prom

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/crew-go/crew"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxTaskNames is how many task names get a series of their own
// unless WithMaxTaskNames says otherwise.
const DefaultMaxTaskNames = 100

// OtherTask is the task label of the series that counts the tasks whose name
// came after the cap set by WithMaxTaskNames. A task really named "other"
// shares that series.
const OtherTask = "other"

// TaskMetrics holds the histograms of task run time and queue wait time, by
// task name. Its Observe method is the observer to give the pool with
// crew.WithObserver, and a Collector made WithTaskMetrics exports them, so it
// must exist before the pool:
//
//	tasks, _ := prom.NewTaskMetrics()
//	pool, _ := crew.New(crew.WithName("api"), crew.WithObserver(tasks.Observe))
//	collector, _ := prom.NewCollector(pool, prom.WithTaskMetrics(tasks))
//
// One TaskMetrics serves one pool. Observe costs two atomic bucket
// increments, two compare-and-swaps on the sums and, for a named task, one
// map lookup; it never allocates once a name has been seen and never locks
// except the first time a name is seen.
type TaskMetrics struct {
	max  int
	run  buckets
	wait buckets

	// names maps each name seen so far, up to max, to its histograms. The
	// map is never written once published: a new name publishes a copy.
	names    atomic.Pointer[map[string]*taskHistograms]
	mu       sync.Mutex // serializes publishing
	unnamed  *taskHistograms
	other    *taskHistograms
	attached atomic.Bool
}

type taskHistograms struct {
	run, wait histogram
}

func (m *TaskMetrics) newTaskHistograms() *taskHistograms {
	h := &taskHistograms{}
	h.run, h.wait = newHistograms(&m.run, &m.wait)
	return h
}

// TaskMetricsOption configures NewTaskMetrics. Options are created by the
// functions of this package only.
type TaskMetricsOption interface {
	apply(*TaskMetrics) error
}

type taskMetricsOptionFunc func(*TaskMetrics) error

func (f taskMetricsOptionFunc) apply(m *TaskMetrics) error { return f(m) }

// WithMaxTaskNames caps the number of task names that get a series of their
// own: the first n names seen do, and tasks with any later name are counted
// under task="other" (OtherTask). Tasks without a name are always counted
// under task="" and do not use up the cap. n may be zero (every named task
// goes to "other") and must not be negative. The default is
// DefaultMaxTaskNames.
func WithMaxTaskNames(n int) TaskMetricsOption {
	return taskMetricsOptionFunc(func(m *TaskMetrics) error {
		if n < 0 {
			return invalid("max task names %d, want >= 0", n)
		}
		m.max = n
		return nil
	})
}

// WithRunBuckets sets the upper bounds, in seconds, of the run-time
// histogram crew_task_run_seconds. They must be positive and increasing; a
// final +Inf may be given and is implied anyway. The default bounds go from
// 100 µs to 60 s: 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
// 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60.
func WithRunBuckets(bounds ...float64) TaskMetricsOption {
	return taskMetricsOptionFunc(func(m *TaskMetrics) (err error) {
		m.run, err = newBuckets("run buckets", bounds)
		return err
	})
}

// WithWaitBuckets sets the upper bounds, in seconds, of the queue-wait
// histogram crew_task_wait_seconds, under the same rules and with the same
// default as WithRunBuckets.
func WithWaitBuckets(bounds ...float64) TaskMetricsOption {
	return taskMetricsOptionFunc(func(m *TaskMetrics) (err error) {
		m.wait, err = newBuckets("wait buckets", bounds)
		return err
	})
}

// NewTaskMetrics returns empty task histograms configured by opts. An invalid
// option makes it return an error wrapping crew.ErrInvalidOption.
func NewTaskMetrics(opts ...TaskMetricsOption) (*TaskMetrics, error) {
	m := &TaskMetrics{max: DefaultMaxTaskNames}
	var err error
	if m.run, err = newBuckets("run buckets", defaultBuckets); err != nil {
		return nil, err
	}
	m.wait = m.run
	for _, o := range opts {
		if o == nil {
			return nil, invalid("nil TaskMetricsOption")
		}
		if err := o.apply(m); err != nil {
			return nil, err
		}
	}
	names := make(map[string]*taskHistograms)
	m.names.Store(&names)
	m.unnamed = m.newTaskHistograms()
	m.other = m.newTaskHistograms()
	return m, nil
}

// Observe records one finished task: its queue wait always, and its run time
// if its function ran (every outcome but dropped, and cancelled before it
// started). Give it to the pool with crew.WithObserver.
func (m *TaskMetrics) Observe(o crew.Observation) {
	h := m.unnamed
	if o.Name != "" {
		h = m.lookup(o.Name)
	}
	h.wait.observe(o.Wait)
	if ran(o) {
		h.run.observe(o.Run)
	}
}

// ran reports whether the task's function was called. The observation has
// no flag for it: a task dropped never runs, and a cancelled one that never
// started has a zero run time.
func ran(o crew.Observation) bool {
	switch o.State {
	case crew.Dropped:
		return false
	case crew.Canceled:
		return o.Run > 0
	}
	return true
}

func (m *TaskMetrics) lookup(name string) *taskHistograms {
	names := *m.names.Load()
	if h, ok := names[name]; ok {
		return h
	}
	// Past the cap no lock is taken, so that a flood of new names costs
	// only the failed lookup.
	if name == OtherTask || len(names) >= m.max {
		return m.other
	}
	return m.add(name)
}

func (m *TaskMetrics) add(name string) *taskHistograms {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.names.Load()
	if h, ok := old[name]; ok {
		return h
	}
	if len(old) >= m.max {
		return m.other
	}
	names := make(map[string]*taskHistograms, len(old)+1)
	for k, v := range old {
		names[k] = v
	}
	// The name outlives the task: don't keep a larger string alive with it.
	h := m.newTaskHistograms()
	names[strings.Clone(name)] = h
	m.names.Store(&names)
	return h
}

// collect sends the histograms: one series per name seen, and the unnamed
// and other series once they have counted a task.
func (m *TaskMetrics) collect(ch chan<- prometheus.Metric, run, wait *prometheus.Desc) {
	send := func(name string, h *taskHistograms) {
		ch <- h.run.metric(run, name)
		ch <- h.wait.metric(wait, name)
	}
	for name, h := range *m.names.Load() {
		send(name, h)
	}
	if m.unnamed.wait.count() > 0 {
		send("", m.unnamed)
	}
	if m.other.wait.count() > 0 {
		send(OtherTask, m.other)
	}
}

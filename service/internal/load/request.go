package load

import (
	"strings"
	"time"
)

// A request is one POST of a run: where, with what body, and the sleep of
// its job (zero for a factorial or a job of -job).
type request struct {
	path, body string
	sleep      time.Duration
}

// requests make a run's requests from its options: the i-th is a factorial
// or a job as the mode says, the same i the same request from run to run.
type requests struct {
	mode      string
	factorial string // the factorial body, o.Numbers twenties
	job       string // the job body when not a sleep of -sleep
	lo, hi    time.Duration
}

func newRequests(o Options) requests {
	rs := requests{
		mode:      o.Mode,
		factorial: `{"numbers":[` + strings.TrimSuffix(strings.Repeat("20,", o.Numbers), ",") + `]}`,
		job:       o.Job,
	}
	if rs.job == "" {
		rs.job = `{"kind":"sleep","duration":"10ms"}`
	}
	rs.lo, rs.hi, _ = sleepRange(o.Sleep)
	return rs
}

// nth is the i-th request: in mixed mode the odd ones are jobs.
func (rs requests) nth(i int64) request {
	if rs.mode != "jobs" && !(rs.mode == "mixed" && i%2 == 1) {
		return request{path: "/v1/factorial", body: rs.factorial}
	}
	if rs.lo == 0 {
		return request{path: "/v1/jobs", body: rs.job}
	}
	sleep := sleepOf(i, rs.lo, rs.hi)
	return request{path: "/v1/jobs", body: `{"kind":"sleep","duration":"` + sleep.String() + `"}`, sleep: sleep}
}

// sleepOf is the i-th job's sleep, spread evenly over [lo, hi] by the
// golden ratio, the same from run to run.
func sleepOf(i int64, lo, hi time.Duration) time.Duration {
	const phi = 0.6180339887498949
	f := float64(i) * phi
	f -= float64(int64(f))
	return lo + time.Duration(f*float64(hi-lo)).Round(time.Millisecond)
}

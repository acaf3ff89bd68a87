package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The lifecycle's periodic job: a factorial of 17 every second, whose
// result no other job of the test has (the load's are sleeps).
const (
	periodicPath   = "/v1/periodic/lifecycle-tick"
	periodicBody   = `{"every":"@every 1s","kind":"factorial","n":17}`
	periodicResult = 355687428096000 // 17!, exact in a JSON number read as a float64
)

// periodic is the lifecycle's periodic job: set through one replica before
// the faults, set again as it is through the others (as replicas that set
// their periodic jobs at start would), and again through each after the
// rolling restart; deleted before the check.
type periodic struct {
	set, deleted time.Time
}

// startPeriodic sets the periodic job through every replica in turn: the
// first sets it, the others find it as it is.
func (lc *lifecycle) startPeriodic(ctx context.Context, t *testing.T) {
	for i := range crewds {
		code, b, via := lc.do(ctx, i, "PUT", periodicPath, periodicBody)
		var got struct{ Changed bool }
		if code != http.StatusOK || json.Unmarshal(b, &got) != nil || got.Changed != (i == 0) {
			t.Fatalf("PUT %s via %s (%d of %d): %d %s, want changed %v", periodicPath, via, i+1, len(crewds), code, firstLine(b), i == 0)
		}
		if i == 0 {
			lc.periodic.set = time.Now()
		}
	}
}

// checkPeriodic sets the periodic job again through every replica (after
// the restarts: unchanged), deletes it, and checks its ticks' jobs: each
// succeeded, at most one a second (no tick doubled by a replica, a
// rollout or a fault), and at least one every other second.
func (lc *lifecycle) checkPeriodic(ctx context.Context, t *testing.T) {
	for i := range crewds {
		code, b, via := lc.do(ctx, i, "PUT", periodicPath, periodicBody)
		var got struct{ Changed bool }
		switch {
		case code != http.StatusOK || json.Unmarshal(b, &got) != nil:
			t.Errorf("PUT %s again via %s: %d %s", periodicPath, via, code, firstLine(b))
		case got.Changed:
			t.Errorf("PUT %s again via %s, as it was: changed (its ticks moved)", periodicPath, via)
		}
	}
	if code, b, _ := lc.do(ctx, 2, "DELETE", periodicPath, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE %s: %d %s", periodicPath, code, firstLine(b))
	}
	lc.periodic.deleted = time.Now()
	seconds := int(lc.periodic.deleted.Sub(lc.periodic.set) / time.Second)
	var ticks, ended int
	waitFor(ctx, t, 60*time.Second, "the periodic job's ticks' jobs to succeed", func() (bool, string) {
		list, err := lc.list(ctx, "kind=factorial")
		if err != nil {
			return false, err.Error()
		}
		ticks, ended = len(list), 0
		for _, r := range list {
			if r.state() == "succeeded" && r["result"] == float64(periodicResult) {
				ended++
			}
		}
		return ticks > 0 && ended == ticks, fmt.Sprintf("%d of %d ticks' jobs succeeded", ended, ticks)
	})
	t.Logf("periodic job @every 1s for %d s through the faults: %d ticks' jobs, all succeeded", seconds, ticks)
	if ticks > seconds+2 {
		t.Errorf("%d ticks' jobs in %d s of a tick a second: a tick ran more than once", ticks, seconds)
	}
	if ticks < seconds/2 {
		t.Errorf("%d ticks' jobs in %d s of a tick a second: fewer than half", ticks, seconds)
	}
}

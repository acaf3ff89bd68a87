package natsjs

import (
	"testing"
	"time"
)

// TestWindowRules holds the adaptive window to window.go's rules, decision
// by decision on a made-up clock.
func TestWindowRules(t *testing.T) {
	const bound = 8
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	// A fixed window is what it was given, whatever happens.
	if w := newWindow(5, 30*time.Second); w.decide(at(0), 0, bound, 8, 0, true) != 5 {
		t.Fatal("a fixed window moved")
	}

	w := newWindow(-1, 30*time.Second)
	if got := w.decide(at(0), 0, bound, 8, 0, false); got != MinWindow {
		t.Fatalf("first decision: %d, want MinWindow %d", got, MinWindow)
	}
	// A rate is learned: 1,000 starts in 50 ms.
	w.decide(at(50), 1000, bound, 0, 3, false)

	// Rule 1: free slots and nothing waiting grow it only with a backlog.
	if got := w.decide(at(51), 1000, bound, 4, 0, false); got != MinWindow {
		t.Fatalf("free slots without a backlog grew the window to %d", got)
	}
	if got := w.decide(at(52), 1000, bound, 4, 0, true); got != MinWindow+4 {
		t.Fatalf("starved with a backlog: %d, want %d", got, MinWindow+4)
	}
	// Rule 3: never above MaxWindowFactor times the bound.
	for i := range 20 {
		w.decide(at(53+i), 1000, bound, bound, 0, true)
	}
	if got := w.decide(at(80), 1000, bound, bound, 0, true); got != MaxWindowFactor*bound {
		t.Fatalf("starved for long: %d, want the cap %d", got, MaxWindowFactor*bound)
	}
	// Rule 2: an interval that starved does not shrink it; intervals fed do.
	if got := w.decide(at(100), 2000, bound, 0, 5, true); got != MaxWindowFactor*bound {
		t.Fatalf("after a hungry interval: %d, want %d", got, MaxWindowFactor*bound)
	}
	prev := MaxWindowFactor * bound
	for i := 1; i <= 40; i++ {
		got := w.decide(at(100+50*i), uint64(2000+1000*i), bound, 0, 5, true)
		if got > prev {
			t.Fatalf("a fed interval grew the window: %d after %d", got, prev)
		}
		prev = got
	}
	if prev != MinWindow {
		t.Fatalf("40 fed intervals left the window at %d, want MinWindow", prev)
	}

	// Rule 3: a slow handler's rate caps it by a tenth of AckWait: 2 starts
	// a second and AckWait 30 s allow 6, however starved.
	slow := newWindow(-1, 30*time.Second)
	slow.decide(at(0), 0, bound, 0, 0, true)
	for i := 1; i <= 20; i++ {
		slow.decide(at(1000*i), uint64(2*i), bound, bound, 0, true)
	}
	if got := slow.decide(at(21000), 42, bound, bound, 0, true); got != 6 {
		t.Fatalf("2 starts/s, AckWait 30 s: window %d, want 6 (a tenth of AckWait's starts)", got)
	}
}

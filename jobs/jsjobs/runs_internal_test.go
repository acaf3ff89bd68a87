package jsjobs

import (
	"context"
	"errors"
	"testing"
)

// TestRunsCancelEveryRunOfAJob: two runs of one job here at once are both
// cancelled by its cancel, and the first to end leaves the other
// registered, still cancellable.
func TestRunsCancelEveryRunOfAJob(t *testing.T) {
	var rs runs
	first, endFirst := rs.start(context.Background(), "a")
	second, endSecond := rs.start(context.Background(), "a")
	other, endOther := rs.start(context.Background(), "b")
	defer endOther()
	endFirst()
	if first.Err() == nil {
		t.Fatal("an ended run's context is still live")
	}
	rs.cancel("a")
	if !errors.Is(context.Cause(second), errJobCanceled) {
		t.Fatalf("the second run, after the first ended: cause %v, want the cancel", context.Cause(second))
	}
	if other.Err() != nil {
		t.Fatal("another job's run cancelled")
	}
	endSecond()
	if _, ok := rs.byID["a"]; ok || len(rs.byID) != 1 {
		t.Fatalf("runs left registered: %v", rs.byID)
	}
	third, endThird := rs.start(context.Background(), "a")
	fourth, endFourth := rs.start(context.Background(), "a")
	rs.cancel("a")
	endThird()
	endFourth()
	if !errors.Is(context.Cause(third), errJobCanceled) || !errors.Is(context.Cause(fourth), errJobCanceled) {
		t.Fatalf("two runs at once: causes %v and %v, want the cancel for both", context.Cause(third), context.Cause(fourth))
	}
}

package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/crew-go/crew/jobs"
)

// TestRunsCancelEveryRunOfAJob: two runs of one job here at once are both
// cancelled by its cancel, and the first to end leaves the other
// registered, still cancellable.
func TestRunsCancelEveryRunOfAJob(t *testing.T) {
	var rs runs
	first, endFirst, _ := rs.start(context.Background(), jobs.RunningJob{ID: "a"})
	second, endSecond, _ := rs.start(context.Background(), jobs.RunningJob{ID: "a"})
	other, endOther, _ := rs.start(context.Background(), jobs.RunningJob{ID: "b"})
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
	third, endThird, _ := rs.start(context.Background(), jobs.RunningJob{ID: "a"})
	fourth, endFourth, _ := rs.start(context.Background(), jobs.RunningJob{ID: "a"})
	rs.cancel("a")
	endThird()
	endFourth()
	if !errors.Is(context.Cause(third), errJobCanceled) || !errors.Is(context.Cause(fourth), errJobCanceled) {
		t.Fatalf("two runs at once: causes %v and %v, want the cancel for both", context.Cause(third), context.Cause(fourth))
	}
}

// TestRunsRememberTheLastCancels: a cancel heard for a job not running
// here is kept, so that the job's run, if it was held here, starts knowing
// it; the oldest are forgotten beyond maxNoticed, a repeated one is kept
// once.
func TestRunsRememberTheLastCancels(t *testing.T) {
	var rs runs
	canceled := func(id string) bool {
		_, done, canceled := rs.start(context.Background(), jobs.RunningJob{ID: id})
		done()
		return canceled
	}
	if canceled("a") {
		t.Fatal("a cancel never heard is remembered")
	}
	rs.cancel("a")
	rs.cancel("a")
	if !canceled("a") || len(rs.order) != 1 {
		t.Fatalf("after two cancels of a: remembered %v, %d kept", canceled("a"), len(rs.order))
	}
	for i := range maxNoticed {
		rs.cancel(fmt.Sprint("j", i))
	}
	if canceled("a") {
		t.Fatal("the oldest cancel is still remembered beyond maxNoticed")
	}
	last := fmt.Sprint("j", maxNoticed-1)
	if !canceled("j1") || !canceled(last) || len(rs.noticed) != maxNoticed {
		t.Fatalf("j1 %v, %s %v, %d remembered, want both and %d", canceled("j1"), last, canceled(last), len(rs.noticed), maxNoticed)
	}
}

package jsjobs

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew/jobs"
)

// TestQueueGaugesNeverHoldAScrape: a scrape gets the queues as last read
// at once, whatever the server does: the first read under way answers
// nothing yet, its result the next; a read is started again only once the
// last is queuesEvery old; a read that fails exports nothing (a store that
// does not answer); Close waits for a read under way.
func TestQueueGaugesNeverHoldAScrape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g queueGauges
		release := make(chan struct{})
		reads := 0
		read := func(context.Context) ([]jobs.QueueInfo, error) {
			reads++
			<-release
			return []jobs.QueueInfo{{Queue: jobs.Queue{Name: "a"}}}, nil
		}
		if got := g.snapshot(read); got != nil {
			t.Fatalf("before the first read ended: %v", got)
		}
		close(release)
		synctest.Wait()
		if got := g.snapshot(read); len(got) != 1 || reads != 1 {
			t.Fatalf("after it: %v, %d reads (want its result, no second read)", got, reads)
		}
		time.Sleep(queuesEvery)
		failing := func(context.Context) ([]jobs.QueueInfo, error) { return nil, errors.New("no responders") }
		if got := g.snapshot(failing); len(got) != 1 {
			t.Fatalf("while the next read runs: %v, want the last", got)
		}
		synctest.Wait()
		if got := g.snapshot(failing); got != nil {
			t.Fatalf("after a failed read: %v, want none", got)
		}
		g.close()
	})
}

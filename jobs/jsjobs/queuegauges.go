package jsjobs

import (
	"context"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
)

// queueGauges are the queues as last read for the metrics. A scrape never
// waits for the server: it exports the last read, and starts the next in
// the background when that one is older than queuesEvery (none exported
// before the first read, or while the store does not answer).
type queueGauges struct {
	mu         sync.Mutex
	infos      []jobs.QueueInfo
	at         time.Time
	refreshing bool
	closed     bool
	reads      sync.WaitGroup
}

// queuesEvery bounds how old the queues the metrics export may be;
// queuesWait bounds one read of them.
const (
	queuesEvery = 5 * time.Second
	queuesWait  = 2 * time.Second
)

// snapshot returns the queues as last read, and starts a read in the
// background if they are older than queuesEvery.
func (g *queueGauges) snapshot(read func(context.Context) ([]jobs.QueueInfo, error)) []jobs.QueueInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.refreshing && !g.closed && time.Since(g.at) >= queuesEvery {
		g.refreshing = true
		g.reads.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), queuesWait)
			defer cancel()
			qs, err := read(ctx)
			g.mu.Lock()
			defer g.mu.Unlock()
			g.refreshing, g.at = false, time.Now()
			if err == nil {
				g.infos = qs
			} else {
				g.infos = nil // not exported while the store does not answer
			}
		})
	}
	return g.infos
}

// close waits for a read under way, and starts none after.
func (g *queueGauges) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.reads.Wait()
}

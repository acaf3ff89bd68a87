package jsjobs

import (
	"sync"
	"time"
)

// rates are the queues' rates as this process last read them (rate.go),
// each read again at most every rateRead.
type rates struct {
	mu      sync.Mutex // guards byQueue
	byQueue map[string]*queueRate
}

type queueRate struct {
	mu       sync.Mutex    // held while read: the jobs starting meanwhile wait for it
	interval time.Duration // 0: no rate
	readAt   time.Time
}

// rateRead is how often a process reads a queue's rate from its consumer.
const rateRead = 2 * time.Second

// interval is queue q's interval as last read, or as read now by read
// when that was rateRead ago or more; a read that fails (ok false) keeps
// the one before.
func (rs *rates) interval(q string, read func() (iv time.Duration, ok bool)) time.Duration {
	rs.mu.Lock()
	if rs.byQueue == nil {
		rs.byQueue = map[string]*queueRate{}
	}
	qr := rs.byQueue[q]
	if qr == nil {
		qr = &queueRate{}
		rs.byQueue[q] = qr
	}
	rs.mu.Unlock()
	qr.mu.Lock()
	defer qr.mu.Unlock()
	if time.Since(qr.readAt) < rateRead {
		return qr.interval
	}
	qr.readAt = time.Now()
	if iv, ok := read(); ok {
		qr.interval = iv
	}
	return qr.interval
}

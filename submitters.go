package crew

import (
	"slices"
	"sync"
	"sync/atomic"
)

// submitters is the list of submitters blocked for room in the queue, in
// arrival order. A waiter registers before it retries its push, and a
// worker looks at count after each pop, so a freed slot is never missed:
// of the two, at least one sees the other.
type submitters struct {
	count atomic.Int32 // listed waiters, read by workers after every pop

	mu    sync.Mutex
	list  []chan struct{}
	spare []chan struct{} // waiter channels to reuse
}

func (s *submitters) channel() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.spare); n > 0 {
		wake := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return wake
	}
	return make(chan struct{}, 1)
}

func (s *submitters) recycle(wake chan struct{}) {
	s.mu.Lock()
	s.spare = append(s.spare, wake)
	s.mu.Unlock()
}

func (s *submitters) add(wake chan struct{}) {
	s.mu.Lock()
	s.list = append(s.list, wake)
	s.count.Add(1)
	s.mu.Unlock()
}

// leave takes wake off the list. If a worker had already taken it off, its
// signal is on the way: it is received and passed on, so that it is neither
// lost nor left in the channel.
func (s *submitters) leave(wake chan struct{}) {
	s.mu.Lock()
	for i, w := range s.list {
		if w == wake {
			s.list = slices.Delete(s.list, i, i+1)
			s.count.Add(-1)
			s.mu.Unlock()
			return
		}
	}
	s.mu.Unlock()
	<-wake
	s.wakeOne()
}

// wakeOne tells the longest-waiting submitter that there is room.
func (s *submitters) wakeOne() {
	s.mu.Lock()
	if len(s.list) == 0 {
		s.mu.Unlock()
		return
	}
	w := s.list[0]
	// Shift in place: the list keeps its capacity, so a submitter that
	// blocks again and again does not allocate.
	s.list = slices.Delete(s.list, 0, 1)
	s.count.Add(-1)
	s.mu.Unlock()
	w <- struct{}{}
}

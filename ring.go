package crew

import (
	"sync/atomic"
	"time"
)

// ring is a bounded multi-producer multi-consumer queue of items after
// Dmitry Vyukov's design: every slot carries a sequence number that tells
// producers and consumers whose turn it is, so a push or a pop is one CAS on a
// shared position plus one store, with no lock.
//
// A slot holds only what short and group tasks need, in 32 bytes, two to a
// cache line: the size of a slot is most of the cost of a hand-off between
// cores (bench/README has the measurement). What long tasks,
// names and observer times need lives in a side array that producer and
// consumer touch only when the slot's sequence number says it is used.
//
// Sequence numbers count in steps of four: a slot at position pos is free
// at 4*pos and written at 4*pos+1, plus 2 when its side entry is used; so
// "written" and "free for the next lap" differ even for a ring of one slot.
//
// The top bit of tail is the closed flag. Once set no push can succeed, and
// since tail stops moving, head == tail tells that every item ever pushed
// has been popped: shutdown relies on both.
type ring struct {
	_     [64]byte
	head  atomic.Uint64
	_     [56]byte
	tail  atomic.Uint64
	_     [56]byte
	slots []slot
	sides []side
	size  uint64
	mask  uint64 // size-1 when size is a power of two, else 0
}

type slot struct {
	seq atomic.Uint64
	fn  func()
	efn func() error
	g   *Group
}

type side struct {
	t    *Task
	name string
	enq  time.Duration
}

const (
	closedBit = 1 << 63
	written   = 1 // seq = 4*pos + written (+ withSide)
	withSide  = 2
)

type pushResult uint8

const (
	pushed pushResult = iota
	// overtaken is pushed, but later pushes reserved their slots before
	// this one was written: they may have relied on a looker that saw the
	// queue's head unwritten and went on (workerSet's rule 2).
	overtaken
	full
	closed
)

func newRing(size int) *ring {
	r := &ring{slots: make([]slot, size), sides: make([]side, size), size: uint64(size)}
	if size&(size-1) == 0 {
		r.mask = uint64(size - 1)
	}
	for i := range r.slots {
		r.slots[i].seq.Store(4 * uint64(i))
	}
	return r
}

func (r *ring) index(pos uint64) uint64 {
	if r.mask != 0 || r.size == 1 {
		return pos & r.mask
	}
	return pos % r.size
}

func (r *ring) push(it *item) pushResult {
	pos := r.tail.Load()
	for {
		if pos&closedBit != 0 {
			return closed
		}
		i := r.index(pos)
		s := &r.slots[i]
		seq := s.seq.Load()
		switch dif := int64(seq - 4*pos); {
		case dif == 0:
			if r.tail.CompareAndSwap(pos, pos+1) {
				yieldpoint()
				s.fn, s.efn, s.g = it.fn, it.efn, it.g
				seq = 4*pos + written
				if it.t != nil || it.name != "" || it.enq != 0 {
					r.sides[i] = side{t: it.t, name: it.name, enq: it.enq}
					seq += withSide
				}
				s.seq.Store(seq)
				yieldpoint()
				// The tail line is ours from the CAS, unless a later
				// push took it: then it is worth the read.
				if r.tail.Load()&^closedBit != pos+1 {
					return overtaken
				}
				return pushed
			}
			pos = r.tail.Load()
		case dif < 0:
			// The slot still holds the item of the previous lap.
			return full
		default:
			pos = r.tail.Load()
		}
	}
}

// pop takes the oldest item into *it, which it overwrites whole.
func (r *ring) pop(it *item) bool {
	pos := r.head.Load()
	for {
		i := r.index(pos)
		s := &r.slots[i]
		seq := s.seq.Load()
		switch dif := int64(seq&^withSide - (4*pos + written)); {
		case dif == 0:
			if r.head.CompareAndSwap(pos, pos+1) {
				it.fn, it.efn, it.g = s.fn, s.efn, s.g
				s.fn, s.efn, s.g = nil, nil, nil
				if seq&withSide != 0 {
					sd := &r.sides[i]
					it.t, it.name, it.enq = sd.t, sd.name, sd.enq
					*sd = side{}
				} else {
					it.t, it.name, it.enq = nil, "", 0
				}
				s.seq.Store(4 * (pos + r.size))
				return true
			}
			pos = r.head.Load()
		case dif < 0:
			// Empty, or a producer has reserved the slot and is writing it.
			return false
		default:
			pos = r.head.Load()
		}
	}
}

// ready reports whether the item at head is written and waiting. It reads
// only what a pop would, not the producers' tail, so idle workers polling
// it do not take that cache line from the producers. If head moved while it
// read the slot, it looks at the new head: the slot it read may have just
// been emptied by a pop while the next one waits.
func (r *ring) ready() bool {
	pos := r.head.Load()
	for {
		yieldpoint()
		if r.slots[r.index(pos)].seq.Load()&^withSide == 4*pos+written {
			return true
		}
		// A consumer that moved head meanwhile may have emptied the slot
		// read while the next one waits: look again at the new head.
		now := r.head.Load()
		if now == pos {
			return false
		}
		pos = now
	}
}

// close stops all further pushes.
func (r *ring) close() {
	for {
		t := r.tail.Load()
		if t&closedBit != 0 || r.tail.CompareAndSwap(t, t|closedBit) {
			return
		}
	}
}

// len is the number of items pushed and not yet popped, including pushes
// still being written. Head is read before tail, so a concurrent change
// can only make it larger, never hide an item (the wake-up rules rely on
// that); it is capped at the ring's size, which it may pass only because
// the two were read apart.
func (r *ring) len() int {
	h := r.head.Load()
	return r.between(h, r.tail.Load()&^closedBit)
}

// between is the length of a ring whose head and tail were read as h and t.
func (r *ring) between(h, t uint64) int {
	if t <= h {
		return 0
	}
	return int(min(t-h, r.size))
}

// pushes is the number of successful pushes so far.
func (r *ring) pushes() uint64 { return r.tail.Load() &^ closedBit }

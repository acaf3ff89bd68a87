package crew

import "sync/atomic"

// ring is a bounded multi-producer multi-consumer queue of items after
// Dmitry Vyukov's design: every slot carries a sequence number that tells
// producers and consumers whose turn it is, so a push or a pop is one CAS on a
// shared position plus one store, with no lock.
//
// Sequence numbers count in steps of two (a slot at position pos is free at
// 2*pos and written at 2*pos+1) so that "written" and "free for the next
// lap" differ even for a ring of one slot.
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
	size  uint64
	mask  uint64 // size-1 when size is a power of two, else 0
}

type slot struct {
	seq atomic.Uint64
	it  item // with seq, one cache line: neighbours do not false-share

}

const closedBit = 1 << 63

type pushResult uint8

const (
	pushed pushResult = iota
	full
	closed
)

func newRing(size int) *ring {
	r := &ring{slots: make([]slot, size), size: uint64(size)}
	if size&(size-1) == 0 {
		r.mask = uint64(size - 1)
	}
	for i := range r.slots {
		r.slots[i].seq.Store(2 * uint64(i))
	}
	return r
}

func (r *ring) slot(pos uint64) *slot {
	if r.mask != 0 || r.size == 1 {
		return &r.slots[pos&r.mask]
	}
	return &r.slots[pos%r.size]
}

func (r *ring) push(it *item) pushResult {
	pos := r.tail.Load()
	for {
		if pos&closedBit != 0 {
			return closed
		}
		s := r.slot(pos)
		seq := s.seq.Load()
		switch dif := int64(seq - 2*pos); {
		case dif == 0:
			if r.tail.CompareAndSwap(pos, pos+1) {
				s.it = *it
				s.seq.Store(2*pos + 1)
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

func (r *ring) pop() (item, bool) {
	pos := r.head.Load()
	for {
		s := r.slot(pos)
		seq := s.seq.Load()
		switch dif := int64(seq - (2*pos + 1)); {
		case dif == 0:
			if r.head.CompareAndSwap(pos, pos+1) {
				it := s.it
				s.it = item{}
				s.seq.Store(2 * (pos + r.size))
				return it, true
			}
			pos = r.head.Load()
		case dif < 0:
			// Empty, or a producer has reserved the slot and is writing it.
			return item{}, false
		default:
			pos = r.head.Load()
		}
	}
}

// ready reports whether the item at head is written and waiting. It reads
// only what a pop would, not the producers' tail, so idle workers polling
// it do not take that cache line from the producers.
func (r *ring) ready() bool {
	pos := r.head.Load()
	return r.slot(pos).seq.Load() == 2*pos+1
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
// still being written.
func (r *ring) len() int {
	h := r.head.Load()
	t := r.tail.Load() &^ closedBit
	if t <= h {
		return 0
	}
	return int(t - h)
}

// pushes is the number of successful pushes so far.
func (r *ring) pushes() uint64 { return r.tail.Load() &^ closedBit }

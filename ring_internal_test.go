package crew

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// The hot part of a slot must stay at 32 bytes: two to a cache line.
func TestSlotSize(t *testing.T) {
	if n := unsafe.Sizeof(slot{}); n != 32 {
		t.Fatalf("slot is %d bytes, want 32", n)
	}
}

// TestRingFIFOAndBounds checks, for sizes including 1 and a non-power of
// two, that the ring keeps order, refuses a push when full, carries the side
// part of an item only where it is used, and stops pushes once closed.
func TestRingFIFOAndBounds(t *testing.T) {
	for _, size := range []int{1, 2, 3, 5, 8} {
		r := newRing(size)
		task := &Task{}
		for lap := range 3 {
			for i := range size {
				it := item{fn: func() {}}
				if i%2 == 1 {
					it = item{t: task, name: "n", enq: 7}
				}
				if r.push(&it) != pushed {
					t.Fatalf("size %d lap %d: push %d refused", size, lap, i)
				}
			}
			if r.push(&item{fn: func() {}}) != full || r.len() != size {
				t.Fatalf("size %d: a full ring took a push (len %d)", size, r.len())
			}
			for i := range size {
				if !r.ready() {
					t.Fatalf("size %d: not ready with %d queued", size, size-i)
				}
				var it item
				if !r.pop(&it) {
					t.Fatalf("size %d: pop %d failed", size, i)
				}
				if i%2 == 1 && (it.t != task || it.name != "n" || it.enq != 7 || it.fn != nil) ||
					i%2 == 0 && (it.fn == nil || it.t != nil || it.name != "") {
					t.Fatalf("size %d: item %d came back as %+v", size, i, it)
				}
			}
			if r.pop(new(item)) || r.ready() || r.len() != 0 {
				t.Fatalf("size %d: empty ring popped", size)
			}
		}
		r.close()
		if r.push(&item{fn: func() {}}) != closed {
			t.Fatalf("size %d: push after close", size)
		}
	}
}

// TestRingConcurrent pushes from many goroutines and pops from many, and
// checks that every item comes out exactly once.
func TestRingConcurrent(t *testing.T) {
	r := newRing(7)
	const producers, per = 4, 5000
	seen := make([]int32, producers*per)
	var mu sync.Mutex
	var wg sync.WaitGroup
	tasks := make([]Task, producers*per)
	for p := range producers {
		wg.Go(func() {
			for i := range per {
				n := p*per + i
				it := item{t: &tasks[n]}
				for r.push(&it) == full { // pushed, or pushed and overtaken
					runtime.Gosched() // at GOMAXPROCS=1 a busy loop waits for preemption
				}
			}
		})
	}
	var popped atomic.Int64
	var got sync.WaitGroup
	for range 3 {
		got.Go(func() {
			for popped.Load() < int64(len(seen)) {
				var it item
				if r.pop(&it) {
					n := (uintptr(unsafe.Pointer(it.t)) - uintptr(unsafe.Pointer(&tasks[0]))) / unsafe.Sizeof(tasks[0])
					mu.Lock()
					seen[n]++
					mu.Unlock()
					popped.Add(1)
				} else {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	got.Wait()
	for n, s := range seen {
		if s != 1 {
			t.Fatalf("item %d popped %d times", n, s)
		}
	}
}

// TestRingLengthWithinBounds: head and tail read apart (a stale head, a
// tail that moved past it by laps) never give a length outside 0..size.
func TestRingLengthWithinBounds(t *testing.T) {
	r := newRing(4)
	for _, c := range []struct {
		h, t uint64
		want int
	}{{0, 0, 0}, {0, 3, 3}, {0, 4, 4}, {0, 1232, 4}, {10, 7, 0}, {5, 6, 1}} {
		if got := r.between(c.h, c.t); got != c.want {
			t.Errorf("between(%d, %d) = %d, want %d", c.h, c.t, got, c.want)
		}
	}
}

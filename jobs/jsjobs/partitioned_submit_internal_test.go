package jsjobs

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestLeavingAPartitionSkipsItsLeadersOthers: a submit that left partition
// 0 tries next the partition led by another server, and the one led by
// the same server only last; once the cooldown has passed every partition
// is tried in turn again. Without leaders known, only the partition left
// is skipped.
func TestLeavingAPartitionSkipsItsLeadersOthers(t *testing.T) {
	p := &Partitioned{parts: make([]*Runner, 3), failedAt: make([]time.Time, 3), leaders: []string{"n2", "n2", "n3"}}
	now := time.Now()
	p.leave(0, now, time.Second)
	if got := p.cooledLast([]int{1, 2}, now); !slices.Equal(got, []int{2, 1}) {
		t.Errorf("after partition 0 (on n2) was left: %v, want [2 1] (1 is on n2 too)", got)
	}
	if got := p.cooledLast([]int{0, 1, 2}, now.Add(partitionCooldown)); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("after the cooldown: %v, want [0 1 2]", got)
	}
	p = &Partitioned{parts: make([]*Runner, 3), failedAt: make([]time.Time, 3), leaders: make([]string, 3)}
	p.leave(0, now, time.Second)
	if got := p.cooledLast([]int{1, 2, 0}, now); !slices.Equal(got, []int{1, 2, 0}) {
		t.Errorf("leaders unknown: %v, want [1 2 0]", got)
	}
}

// TestLeavingAPartitionSkipsThoseSilentSinceTheFault: a submit that left
// partition 0 after its Failover tries next the partition that stored a
// submit since the one left began (alive after the fault), and last the
// one that stored none since (likely out with it), though the leaders
// noted say all three are on different servers (a note a moment old).
// With no partition storing anything meanwhile (one client submitting in
// turn), silence is no sign: only the partition left is skipped.
func TestLeavingAPartitionSkipsThoseSilentSinceTheFault(t *testing.T) {
	p := &Partitioned{parts: make([]*Runner, 3), failedAt: make([]time.Time, 3), leaders: []string{"n1", "n2", "n3"}, storedAt: make([]atomic.Int64, 3)}
	now := time.Now()
	p.storedAt[1].Store(now.Add(-2 * time.Second).UnixNano()) // before the fault
	p.storedAt[2].Store(now.Add(-100 * time.Millisecond).UnixNano())
	p.leave(0, now, 500*time.Millisecond)
	if got := p.cooledLast([]int{1, 2}, now); !slices.Equal(got, []int{2, 1}) {
		t.Errorf("after partition 0 was left: %v, want [2 1] (1 stored nothing since the fault)", got)
	}
	p = &Partitioned{parts: make([]*Runner, 3), failedAt: make([]time.Time, 3), leaders: []string{"n1", "n2", "n3"}, storedAt: make([]atomic.Int64, 3)}
	p.storedAt[1].Store(now.Add(-600 * time.Millisecond).UnixNano())
	p.storedAt[2].Store(now.Add(-700 * time.Millisecond).UnixNano())
	p.leave(0, now, 500*time.Millisecond)
	if got := p.cooledLast([]int{1, 2}, now); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("after partition 0 was left, nothing stored meanwhile: %v, want [1 2]", got)
	}
}

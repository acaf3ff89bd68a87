package jsjobs

import (
	"slices"
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
	p.leave(0, now)
	if got := p.cooledLast([]int{1, 2}, now); !slices.Equal(got, []int{2, 1}) {
		t.Errorf("after partition 0 (on n2) was left: %v, want [2 1] (1 is on n2 too)", got)
	}
	if got := p.cooledLast([]int{0, 1, 2}, now.Add(partitionCooldown)); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("after the cooldown: %v, want [0 1 2]", got)
	}
	p = &Partitioned{parts: make([]*Runner, 3), failedAt: make([]time.Time, 3), leaders: make([]string, 3)}
	p.leave(0, now)
	if got := p.cooledLast([]int{1, 2, 0}, now); !slices.Equal(got, []int{1, 2, 0}) {
		t.Errorf("leaders unknown: %v, want [1 2 0]", got)
	}
}

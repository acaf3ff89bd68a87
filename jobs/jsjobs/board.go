package jsjobs

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go"
)

// replicaEvery is how often a serving process announces itself; a var for
// the tests.
var replicaEvery = 5 * time.Second

// replicaTTL is how long an announcement stands: three missed in a row
// and the process is gone (a message's TTL is at least a second).
func replicaTTL() time.Duration { return max(3*replicaEvery, time.Second) }

// replicaPrefix begins the bucket key of an announcement: never a job id.
const replicaPrefix = "replica."

// board is the latest announcement of each replica, as the tail read them.
type board struct {
	mu   sync.Mutex
	byID map[string]jobs.Replica
}

// apply reads a message of replica name's key: an announcement, or its
// purge.
func (b *board) apply(name string, m *nats.Msg) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byID == nil {
		b.byID = make(map[string]jobs.Replica)
	}
	if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		delete(b.byID, name)
		return
	}
	var rep jobs.Replica
	if json.Unmarshal(m.Data, &rep) != nil {
		return
	}
	rep.Name, rep.Seen = name, time.Unix(0, stamp(m))
	b.byID[name] = rep
}

// standing are the announcements made since now less replicaTTL, by name.
func (b *board) standing(now time.Time) []jobs.Replica {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []jobs.Replica
	for _, rep := range b.byID {
		if now.Sub(rep.Seen) <= replicaTTL() {
			out = append(out, rep)
		}
	}
	slices.SortFunc(out, func(a, b jobs.Replica) int { return strings.Compare(a.Name, b.Name) })
	return out
}

package jsjobs

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// What each process running jobs says of itself, so that an operator sees
// the replicas and what each runs (jobs.ReplicaLister):
//   - A process announces itself from its first Source on, every
//     replicaEvery: one key of the records' bucket, replica.<name>, holding
//     a jobs.Replica (the jobs it runs now, from runs). The message expires
//     after replicaTTL, so a process killed leaves by itself; Close purges
//     the key, so one stopped leaves at once. Cost: one replicated write a
//     process every replicaEvery, whatever its load.
//   - The index's tail of the bucket reads the announcements as it reads
//     the records (board), so Replicas costs no store read beyond the
//     tail's catch-up; an announcement older than replicaTTL by the
//     store's clock is left out (its expiry is not a message the tail
//     reads).

// replicaEvery is how often a serving process announces itself; a var for
// the tests.
var replicaEvery = 5 * time.Second

// replicaTTL is how long an announcement stands: three missed in a row
// and the process is gone (a message's TTL is at least a second).
func replicaTTL() time.Duration { return max(3*replicaEvery, time.Second) }

// replicaPrefix begins the bucket key of an announcement: never a job id.
const replicaPrefix = "replica."

// ReplicaName is the name a process announces itself by when
// Config.Replica is empty: the host's name (a pod's, under Kubernetes),
// with what a key may not hold replaced by '_', and its process id when
// the host has no name.
func ReplicaName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "pid-" + strconv.Itoa(os.Getpid())
	}
	return keySafe(host)
}

// keySafe replaces what a bucket key may not hold by '_', and bounds it.
func keySafe(s string) string {
	b := []byte(s[:min(len(s), maxReplicaName)])
	for i, c := range b {
		if !(c == '-' || c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// maxReplicaName bounds a replica's name.
const maxReplicaName = 100

// validReplica reports whether name may name a replica: 1 to
// maxReplicaName letters, digits, '-' and '_'.
func validReplica(name string) bool {
	return name != "" && len(name) <= maxReplicaName && keySafe(name) == name
}

// announcer writes this process's announcements.
type announcer struct {
	name    string
	started sync.Once
	stop    context.CancelFunc
	done    sync.WaitGroup
	since   time.Time
	failing bool // the last announcement failed (its goroutine's)
}

// announce begins the announcements, once, until stopAndPurge.
func (r *Runner) announce() {
	a := &r.announcer
	a.started.Do(func() {
		ctx, stop := context.WithCancel(context.Background())
		a.stop, a.since = stop, time.Now()
		a.done.Go(func() {
			tick := time.NewTicker(replicaEvery)
			defer tick.Stop()
			for {
				r.announceOnce(ctx)
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	})
}

// announceOnce writes one announcement; the next one tries again after a
// failure, logged once until one succeeds.
func (r *Runner) announceOnce(ctx context.Context) {
	n, longest := r.running.snapshot(jobs.MaxReplicaJobs)
	data, err := json.Marshal(jobs.Replica{Name: r.announcer.name, Started: r.announcer.since, Running: n, Jobs: longest})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	msg := nats.NewMsg(r.layout.record(replicaPrefix + r.announcer.name))
	msg.Data = data
	_, err = r.js.PublishMsg(ctx, msg, jetstream.WithMsgTTL(replicaTTL()))
	if err != nil && !r.announcer.failing {
		r.logWarn("could not say what this process runs (the UI's replicas): trying again", "replica", r.announcer.name, "error", err)
	}
	r.announcer.failing = err != nil
}

// stopAnnouncing ends the announcements and purges this process's, if it
// made any.
func (r *Runner) stopAnnouncing() {
	a := &r.announcer
	a.started.Do(func() {}) // none from now on
	if a.stop == nil {
		return
	}
	a.stop()
	a.done.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), r.storeTimeout)
	defer cancel()
	msg := nats.NewMsg(r.layout.record(replicaPrefix + a.name))
	msg.Header.Set("KV-Operation", "PURGE")
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	_, _ = r.js.PublishMsg(ctx, msg, jetstream.WithMsgTTL(replicaTTL()))
}

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

// Replicas implements jobs.ReplicaLister, from the index's tail of the
// records' bucket, caught up as List catches it up.
func (r *Runner) Replicas(ctx context.Context) ([]jobs.Replica, error) {
	t, err := r.tails()
	if err != nil {
		return nil, err
	}
	if err := r.loaded(ctx, t); err != nil {
		return nil, err
	}
	r.synced(ctx, t)
	return t.replicas.standing(time.Now()), nil
}

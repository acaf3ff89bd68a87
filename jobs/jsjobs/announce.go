package jsjobs

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// announcer writes a process's announcements (replicas.go): from start
// on, every replicaEvery, what runs holds; close purges the last.
type announcer struct {
	name    string
	js      jetstream.JetStream
	subject string // its key's, replica.<name> in the records' bucket
	timeout time.Duration
	running *runs
	log     *slog.Logger

	started sync.Once
	stop    context.CancelFunc
	done    sync.WaitGroup
	since   time.Time
	failing bool // the last announcement failed (its goroutine's)
}

// start begins the announcements, once, until close.
func (a *announcer) start() {
	a.started.Do(func() {
		ctx, stop := context.WithCancel(context.Background())
		a.stop, a.since = stop, time.Now()
		a.done.Go(func() {
			tick := time.NewTicker(replicaEvery)
			defer tick.Stop()
			for {
				a.once(ctx)
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	})
}

// once writes one announcement; the next one tries again after a
// failure, logged once until one succeeds.
func (a *announcer) once(ctx context.Context) {
	n, longest := a.running.snapshot(jobs.MaxReplicaJobs)
	data, err := json.Marshal(jobs.Replica{Name: a.name, Started: a.since, Running: n, Jobs: longest})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	msg := nats.NewMsg(a.subject)
	msg.Data = data
	_, err = a.js.PublishMsg(ctx, msg, jetstream.WithMsgTTL(replicaTTL()))
	if errors.Is(err, context.Canceled) {
		return // closing: no announcement to make
	}
	if err != nil && !a.failing && a.log != nil {
		a.log.Warn("could not say what this process runs (the UI's replicas): trying again", "replica", a.name, "error", err)
	}
	a.failing = err != nil
}

// close ends the announcements and purges this process's, if it made
// any; none start after it.
func (a *announcer) close() {
	a.started.Do(func() {})
	if a.stop == nil {
		return
	}
	a.stop()
	a.done.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	msg := nats.NewMsg(a.subject)
	msg.Header.Set("KV-Operation", "PURGE")
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	_, _ = a.js.PublishMsg(ctx, msg, jetstream.WithMsgTTL(replicaTTL()))
}

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

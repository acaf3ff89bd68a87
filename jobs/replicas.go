package jobs

import (
	"context"
	"time"
)

// Replica is a process that runs jobs of a store, as it last said: every
// few seconds while it serves (jsjobs: every ReplicaEvery).
type Replica struct {
	Name    string    `json:"name"`
	Started time.Time `json:"started"` // when it began to serve
	Seen    time.Time `json:"seen"`    // when it last said what it runs
	// Running counts the jobs it ran when it said; Jobs are the longest
	// running of them, at most MaxReplicaJobs.
	Running int          `json:"running"`
	Jobs    []RunningJob `json:"jobs,omitempty"`
}

// RunningJob is a job a Replica runs, and since when.
type RunningJob struct {
	ID    string    `json:"id"`
	Kind  string    `json:"kind"`
	Queue string    `json:"queue,omitempty"` // "" is DefaultQueue
	Since time.Time `json:"since"`
}

// MaxReplicaJobs bounds the jobs a Replica names.
const MaxReplicaJobs = 20

// ReplicaLister is a Runner that knows the processes running its jobs:
// jsjobs from what each of them writes to its store.
type ReplicaLister interface {
	// Replicas are the processes that said what they run within the last
	// few announcements, by name. One that stopped cleanly leaves at
	// once; one killed leaves when its last announcement expires.
	Replicas(ctx context.Context) ([]Replica, error)
}

package jobs

import (
	"context"
	"time"
)

// StoreGroup is one replicated part of a job store (jsjobs: the jobs'
// stream, the records' bucket) as its cluster reports it.
type StoreGroup struct {
	Name string `json:"name"`
	// Leader is the server that orders its writes; "" while there is none
	// (an election: its writes wait).
	Leader string `json:"leader,omitempty"`
	// Followers are its other replicas; none on a store of one server.
	Followers []StorePeer `json:"followers,omitempty"`
}

// StorePeer is a follower of a StoreGroup: Current when it has every write
// the leader has, else Lag writes behind; Seen is how long ago the leader
// last heard from it.
type StorePeer struct {
	Name    string        `json:"name"`
	Current bool          `json:"current"`
	Offline bool          `json:"offline,omitempty"`
	Lag     uint64        `json:"lag,omitempty"`
	Seen    time.Duration `json:"seen_ns"`
}

// StoreInspector is a Runner that says how its store's replicated parts
// stand: jsjobs from its server's stream info, one request a part.
type StoreInspector interface {
	StoreGroups(ctx context.Context) ([]StoreGroup, error)
}

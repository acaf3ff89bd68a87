package jsjobs

import (
	"encoding/json"
	"fmt"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go"
)

// The server refuses a message over its max payload (1 MiB unless
// configured). A job's spec travels whole in its message and in its
// record, so Submit refuses a spec that would leave no room for the rest of
// a record; and a record that still grows past the limit (a kind's large
// result) is written without its result, saying so, never retried as if
// the store were out: that would hold the job's message and mark the store
// down for every other job.

// recordRoom is what a record needs besides its spec and result: its ids,
// states and times, and MaxErrors errors of MaxErrorLen bytes each.
const recordRoom = 4<<10 + jobs.MaxErrors*(jobs.MaxErrorLen+128)

// headerRoom is what a message's headers may take of the max payload.
const headerRoom = 1 << 10

// maxMessage is the largest message body the store takes, as the server
// behind nc says.
func maxMessage(nc *nats.Conn) int {
	if n := int(nc.MaxPayload()); n > 0 {
		return n - headerRoom
	}
	return 1<<20 - headerRoom // not yet told by a server: its default
}

// sized refuses a job whose spec could not be recorded beside the rest of
// its record, in a store whose largest message is max.
func sized(job jobs.Prepared, max int) error {
	if max := max - recordRoom; len(job.Body) > max {
		return &jobs.InvalidError{Reason: fmt.Sprintf("the job is %d bytes as JSON: at most %d (the store's message limit, less room for its record)", len(job.Body), max)}
	}
	return nil
}

// fit returns rec's JSON, data, or if that is over the store's limit, the
// JSON of rec without its result, its Error saying why; and, for a spec
// accepted before sized bounded it, without its spec; max is the store's
// largest message.
func fit(rec jobs.Record, data []byte, max int) ([]byte, error) {
	if len(data) <= max {
		return data, nil
	}
	if len(rec.Result) > 0 {
		rec.Error = fmt.Sprintf("result of %d bytes not kept: over the store's message limit of %d bytes", len(rec.Result), max)
		rec.Result = nil
		var err error
		if data, err = json.Marshal(rec); err != nil || len(data) <= max {
			return data, err
		}
	}
	rec.Spec = nil
	return json.Marshal(rec)
}

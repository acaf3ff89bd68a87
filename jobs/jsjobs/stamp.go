package jsjobs

import (
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// stamp is a message's time in the stream, Unix ns.
func stamp(m *nats.Msg) int64 {
	t, err := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return 0
	}
	return t.UnixNano()
}

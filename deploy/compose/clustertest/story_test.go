package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// story tells what the NATS cluster holds of job id, for a failure's
// report: its record's revisions the bucket keeps, its messages still in
// the stream, and the consumer's state, read from the server at url.
func story(ctx context.Context, url, id string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// As crewd: its user, over TLS (build-images.sh's secrets/nats).
	secrets := filepath.Join("..", "secrets", "nats")
	password, _ := os.ReadFile(filepath.Join(secrets, "crewd-password"))
	nc, err := nats.Connect(url, nats.Timeout(3*time.Second), nats.UserInfo("crewd", strings.TrimSpace(string(password))),
		nats.RootCAs(filepath.Join(secrets, "tls", "ca.crt")))
	if err != nil {
		return fmt.Sprintf("%s: %v", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "from %s:", url)
	kv, err := js.KeyValue(ctx, stream)
	if err == nil {
		var hist []jetstream.KeyValueEntry
		hist, err = kv.History(ctx, id)
		for _, e := range hist {
			var rec map[string]any
			_ = json.Unmarshal(e.Value(), &rec)
			fmt.Fprintf(&b, "\n  record rev %d %s %s: state %v attempts %v retries %v error %v",
				e.Revision(), e.Created().Format("15:04:05.000"), e.Operation(), rec["state"], rec["attempts"], rec["retries"], rec["error"])
		}
	}
	if err != nil {
		fmt.Fprintf(&b, "\n  record: %v", err)
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		fmt.Fprintf(&b, "\n  stream: %v", err)
		return b.String()
	}
	for _, subj := range []string{stream + "." + id, stream + "-at." + id} {
		m, err := s.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			fmt.Fprintf(&b, "\n  last message on %s: %v", subj, err)
			continue
		}
		fmt.Fprintf(&b, "\n  last message on %s: seq %d at %s headers %v", subj, m.Sequence, m.Time.Format("15:04:05.000"), m.Header)
	}
	if c, err := s.Consumer(ctx, durable); err != nil {
		fmt.Fprintf(&b, "\n  consumer: %v", err)
	} else if info, err := c.Info(ctx); err != nil {
		fmt.Fprintf(&b, "\n  consumer: %v", err)
	} else {
		fmt.Fprintf(&b, "\n  consumer: delivered stream seq %d, ack floor %d, pending %d, ack pending %d, redelivered %d, waiting %d",
			info.Delivered.Stream, info.AckFloor.Stream, info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting)
	}
	return b.String()
}

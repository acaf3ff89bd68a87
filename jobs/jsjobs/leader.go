package jsjobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// lastMsg reads the last message of a subject of a stream.
type lastMsg func(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error)

// leaderLast reads, through js and within timeout, the last message of a
// subject of stream from the
// stream's leader (the JetStream API's message get, not a direct get that
// any replica answers): what the leader has stored, a write just made on
// another process included. jetstream.ErrMsgNotFound when there is none.
func leaderLast(js jetstream.JetStream, timeout time.Duration, stream string) lastMsg {
	api := apiPrefix(js)
	return func(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
		req, _ := json.Marshal(map[string]string{"last_by_subj": subject})
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		m, err := js.Conn().RequestWithContext(ctx, api+"STREAM.MSG.GET."+stream, req)
		if err != nil {
			return nil, err
		}
		var resp struct {
			Error *struct {
				Code        int    `json:"code"`
				ErrCode     int    `json:"err_code"`
				Description string `json:"description"`
			} `json:"error"`
			Message *struct {
				Subject string    `json:"subject"`
				Seq     uint64    `json:"seq"`
				Header  []byte    `json:"hdrs"`
				Data    []byte    `json:"data"`
				Time    time.Time `json:"time"`
			} `json:"message"`
		}
		if err := json.Unmarshal(m.Data, &resp); err != nil {
			return nil, fmt.Errorf("message get from %s: %w", stream, err)
		}
		switch {
		case resp.Error != nil && resp.Error.Code == 404:
			return nil, jetstream.ErrMsgNotFound
		case resp.Error != nil:
			return nil, fmt.Errorf("message get from %s: %d %s", stream, resp.Error.ErrCode, resp.Error.Description)
		case resp.Message == nil:
			return nil, fmt.Errorf("message get from %s: an answer without a message", stream)
		}
		out := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Seq, Data: resp.Message.Data, Time: resp.Message.Time}
		if len(resp.Message.Header) > 0 {
			hm, err := nats.DecodeHeadersMsg(resp.Message.Header)
			if err != nil {
				return nil, fmt.Errorf("message get from %s: its headers: %w", stream, err)
			}
			out.Header = hm
		}
		return out, nil
	}
}

// apiPrefix is the JetStream API's subject prefix js uses.
func apiPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}

package jsjobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// records are the jobs' records, keys of the key-value bucket: read from
// any replica (load) or from the bucket's leader (leaderRecord), written
// whatever their revision (put) or only over the one read (swap), each
// with its state's TTL (ttl) and cut to the store's message limit (fit).
// Every read and write waits for the store at most storeTimeout.
type records struct {
	js           jetstream.JetStream
	kv           jetstream.KeyValue
	layout       layout
	storeTimeout time.Duration
	atLeader     lastMsg // reads a record from the bucket's leader (leaderLast)
	reads        *hedger // the store's reads' hedging (hedged)

	succeededTTL, failedTTL time.Duration
}

// leaderRecord reads job id's record from the bucket's leader.
func (r *records) leaderRecord(ctx context.Context, id string) (jobs.Record, uint64, error) {
	m, err := r.atLeader(ctx, r.layout.record(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) || err == nil && m.Header.Get("KV-Operation") != "" {
		return jobs.Record{}, 0, jobs.ErrNotFound
	}
	if err != nil {
		return jobs.Record{}, 0, storeError(err)
	}
	rec, err := decodeRecord(id, m.Data)
	return rec, m.Sequence, err
}

// leaderRecordAfter reads job id's record from the bucket's leader after
// a write over revision refused (0: none) was refused. The leader refuses
// a write over the last revision too while another write of the record is
// on its way through the group, and reads the record as it was until that
// write is stored: so while it still reads revision refused, it is read
// again a moment later, up to the store's timeout, then returned as it is
// (the write on its way may have failed).
func (r *records) leaderRecordAfter(ctx context.Context, id string, refused uint64) (jobs.Record, uint64, error) {
	deadline := time.Now().Add(r.storeTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		rec, rev, err := r.leaderRecord(ctx, id)
		stale := err == nil && rev == refused || errors.Is(err, jobs.ErrNotFound) && refused == 0
		if !stale || time.Now().Add(wait).After(deadline) {
			return rec, rev, err
		}
		select {
		case <-ctx.Done():
			return rec, rev, err
		case <-time.After(wait):
		}
	}
}

// load reads a record and its revision. Like put and swap, it waits for
// the store at most StoreTimeout.
func (r *records) load(ctx context.Context, id string) (jobs.Record, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	// Any replica of the bucket answers a read (direct get), but a request
	// may go to one cut off the network: hedged.
	e, err := hedged(ctx, r.reads, func(ctx context.Context) (jetstream.KeyValueEntry, error) { return r.kv.Get(ctx, id) })
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) || errors.Is(err, jetstream.ErrInvalidKey) {
		return jobs.Record{}, 0, jobs.ErrNotFound
	}
	if err != nil {
		return jobs.Record{}, 0, storeError(err)
	}
	rec, err := decodeRecord(id, e.Value())
	return rec, e.Revision(), err
}

// decodeRecord decodes job id's record.
func decodeRecord(id string, data []byte) (jobs.Record, error) {
	var rec jobs.Record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a factorial's result is a uint64: no float64 on the way
	if err := dec.Decode(&rec); err != nil {
		return jobs.Record{}, fmt.Errorf("record of job %s: %w", id, err)
	}
	return rec, nil
}

// put writes a record whatever its revision, and returns the new one. A
// finished record carries its TTL (ttl), after which the server removes
// it; a live one carries none.
func (r *records) put(ctx context.Context, rec jobs.Record) (uint64, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	var opts []jetstream.PublishOpt
	if ttl := r.ttl(rec.State); ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	ack, err := r.js.Publish(ctx, r.layout.record(rec.ID), data, opts...)
	if err != nil {
		return 0, storeError(err)
	}
	return ack.Sequence, nil
}

// ttl is how long a record in state st is kept: none while the job lives.
func (r *records) ttl(st jobs.State) time.Duration {
	switch {
	case !st.Terminal():
		return 0
	case st == jobs.Succeeded:
		return r.succeededTTL
	}
	return r.failedTTL
}

// swap writes a record only if it is still at revision rev (0: only if it
// does not exist), with its state's TTL, and returns the new revision;
// errChanged otherwise.
func (r *records) swap(ctx context.Context, rec jobs.Record, rev uint64) (uint64, error) {
	data, err := json.Marshal(rec)
	if err == nil {
		data, err = fit(rec, data, maxMessage(r.js.Conn()))
	}
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(rev)}
	if ttl := r.ttl(rec.State); ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	ack, err := r.js.Publish(ctx, r.layout.record(rec.ID), data, opts...)
	var api *jetstream.APIError
	switch {
	case err == nil:
		return ack.Sequence, nil
	case errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		return 0, errChanged
	}
	return 0, storeError(err)
}

// purge removes job id's record, only if it is still at revision rev:
// a purge marker (the bucket's own, which a KV reader reads as deleted)
// that rolls up the key's earlier messages, and itself expires after
// purgedTTL; errChanged otherwise.
func (r *records) purge(ctx context.Context, id string, rev uint64) error {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	msg := nats.NewMsg(r.layout.record(id))
	msg.Header.Set("KV-Operation", "PURGE")
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	_, err := r.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(purgedTTL))
	var api *jetstream.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		return errChanged
	}
	return storeError(err)
}

// purgedTTL is how long a deleted job's purge marker stays: enough for
// every replica's index to read it.
const purgedTTL = time.Hour

// queuedAgain is an ended job's record queued again by a Retry: fresh
// attempts, its earlier runs' errors kept.
func queuedAgain(rec jobs.Record) jobs.Record {
	rec.State, rec.Retries = jobs.Queued, rec.Retries+1
	rec.Attempts, rec.Deliveries, rec.Result, rec.Error = 0, 0, nil, ""
	rec.Finished, rec.NextRun, rec.CanceledWhile = time.Time{}, time.Time{}, ""
	return rec
}

package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go/jetstream"
)

// A queue's rate (jobs.Queue.Rate): its jobs start at most Rate a Per
// across every process, spaced Per/Rate apart. The rule, in one place:
//
//   - The queue's own consumer keeps the rate (its metadata), set by
//     SetQueue; a process reads it at most every rateRead, so a rate set
//     or changed holds everywhere within that.
//   - The schedule is one key of the records' bucket, rate.<queue>: the
//     time before which no more of the queue's jobs may start. A job
//     about to start takes the next time (now, or that key's time if
//     later), writes that time plus the interval with a compare-and-set on
//     the key's revision (another process's write in between: read
//     again), and waits for its time holding its delivery and its worker.
//     It is GCRA with no burst: no two times closer than the interval
//     anywhere. A job that wakes late for its time takes another (maxLate),
//     so no window of Per starts more than Rate plus a few.
//   - Cost: one replicated write (and a read) a start of a rate-limited
//     queue's job, none for other queues. A process killed after taking a
//     time loses that start: the rate is under-used, never exceeded. The
//     store out (a leader change): the job is handed back as for any
//     outage (natsjs.Unavailable), with no attempt counted, and takes a
//     time again once the store answers. The processes' clocks share the
//     schedule: a clock ahead by d starts its jobs up to d early.

// Metadata keys of a queue's consumer that hold its rate.
const (
	metaRate = "crew_rate"
	metaPer  = "crew_per"
)

// rateMetadata is q's rate as its consumer's metadata: nil for none.
func rateMetadata(q jobs.Queue) map[string]string {
	if q.Rate <= 0 {
		return nil
	}
	per := time.Duration(q.Per)
	if per == 0 {
		per = time.Second
	}
	return map[string]string{metaRate: strconv.Itoa(q.Rate), metaPer: per.String()}
}

// rateOf reads a rate from a consumer's metadata: 0 for none.
func rateOf(meta map[string]string) (int, jobs.Duration) {
	n, err := strconv.Atoi(meta[metaRate])
	per, perr := time.ParseDuration(meta[metaPer])
	q := jobs.Queue{Name: "x", Rate: n, Per: jobs.Duration(per)}
	if err != nil || perr != nil || q.Validate() != nil {
		return 0, 0
	}
	return n, jobs.Duration(per)
}

// rateKey is the bucket key of queue q's schedule: never a job id.
func rateKey(q string) string { return "rate." + q }

// interval is the time between two starts of queue q's jobs, read from
// its consumer at most every rateRead: 0 for a queue with no rate. A
// reading that fails keeps the one before.
func (r *Runner) interval(ctx context.Context, q string) time.Duration {
	return r.rates.interval(q, func() (time.Duration, bool) {
		cons, err := r.queueCons(ctx, q)
		if err != nil {
			return 0, false
		}
		info, err := r.consInfo(ctx, cons)
		if err != nil {
			return 0, false
		}
		n, per := rateOf(info.Config.Metadata)
		return jobs.Queue{Rate: n, Per: per}.Interval(), true
	})
}

// errRateContended is a schedule that others kept changing under us.
var errRateContended = errors.New("a queue's rate schedule keeps changing")

// startAt takes queue q's next start time for a job, interval after the
// last taken, and returns it: the job starts then.
func (r *Runner) startAt(ctx context.Context, q string, interval time.Duration) (time.Time, error) {
	kv := r.store.kv
	key := rateKey(q)
	for range 32 {
		tctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
		var next time.Time
		var rev uint64
		e, err := kv.Get(tctx, key)
		switch {
		case err == nil:
			rev = e.Revision()
			next, _ = time.Parse(time.RFC3339Nano, string(e.Value()))
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			cancel()
			return time.Time{}, storeError(err)
		}
		at := time.Now()
		if next.After(at) {
			at = next
		}
		val := []byte(at.Add(interval).UTC().Format(time.RFC3339Nano))
		if rev == 0 {
			_, err = kv.Create(tctx, key, val)
		} else {
			_, err = kv.Update(tctx, key, val, rev)
		}
		cancel()
		switch {
		case err == nil:
			return at, nil
		case errors.Is(err, jetstream.ErrKeyExists), isWrongLastSequence(err):
			continue // another process took a time first: take the next
		default:
			return time.Time{}, storeError(err)
		}
	}
	return time.Time{}, fmt.Errorf("%w: queue %q: %v", jobs.ErrUnavailable, q, errRateContended)
}

// isWrongLastSequence tells a compare-and-set that lost to another write.
func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// paced waits, for a job of queue q about to start, for its time under
// the queue's rate: at once for a queue with none. The store out, or ctx
// ending, hands the job back for a later run with no attempt counted.
func (r *Runner) paced(ctx context.Context, q string) error {
	if q == jobs.DefaultQueue {
		return nil // it has no rate (SetQueue)
	}
	iv := r.interval(ctx, q)
	if iv <= 0 {
		return nil
	}
	for range maxLate {
		at, err := r.startAt(ctx, q, iv)
		if err != nil {
			return natsjs.Unavailable(err)
		}
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return natsjs.Unavailable(fmt.Errorf("%w: stopped waiting for its start under its queue's rate: %v", jobs.ErrUnavailable, context.Cause(ctx)))
			}
		}
		if time.Since(at) <= max(iv, lateBy) {
			return nil
		}
		// Woken late (a busy process): starting now would crowd the
		// starts taken after this one; this time is let go, another taken.
	}
	return nil
}

// A job whose wait for its time under a rate ended more than lateBy (or
// its queue's interval, if longer) after that time takes another, at most
// maxLate times: so a start is never more than that after its time, and a
// window of Per holds at most Rate + 1 + lateBy/interval starts.
const (
	lateBy  = 50 * time.Millisecond
	maxLate = 8
)

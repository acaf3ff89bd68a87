package jsjobs

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

func testKey(n int) jobKey {
	k, ok := keyOf(fmt.Sprintf("%016x", n))
	if !ok {
		panic(n)
	}
	return k
}

func listIDs(x *index, st jobs.State, limit int, delivered uint64) []string {
	var ids []string
	var after item
	for {
		got, next := x.page(st, "", "", after, limit, map[string]uint64{jobs.DefaultQueue: delivered})
		for _, f := range got {
			ids = append(ids, f.id)
		}
		if next == "" {
			return ids
		}
		after, _ = parseCursor(next)
	}
}

// TestIndexKeepsWhatSaysMore: a record wins over its job's message,
// whichever comes first; of two records or two messages the later;
// a Retry's message wins over the very record it retries, and loses to
// the records written after it.
func TestIndexKeepsWhatSaysMore(t *testing.T) {
	x := newIndex()
	id := testKey(1)
	state := func() jobs.State {
		got, _ := x.page("", "", "", item{}, 10, nil)
		if len(got) != 1 {
			t.Fatalf("listed %v", got)
		}
		return jobs.States[x.byID[id].state]
	}
	x.set(entry{id: id, state: jobs.Succeeded, t: 20, seq: 7})
	x.set(entry{id: id, state: jobs.Queued, t: 10, seq: 3, fromMsg: true}) // its message, read after
	if st := state(); st != jobs.Succeeded {
		t.Fatalf("a message read after its job's record: %s", st)
	}
	x.set(entry{id: id, state: jobs.Running, t: 15, seq: 5}) // an older record
	if st := state(); st != jobs.Succeeded {
		t.Fatalf("an older record read after: %s", st)
	}
	x.set(entry{id: id, state: jobs.Queued, t: 30, seq: 9, fromMsg: true, retryOf: 6}) // a Retry of another revision
	if st := state(); st != jobs.Succeeded {
		t.Fatalf("a stale Retry's message: %s", st)
	}
	x.set(entry{id: id, state: jobs.Failed, t: 25, seq: 8})
	x.set(entry{id: id, state: jobs.Queued, t: 30, seq: 10, fromMsg: true, retryOf: 8})
	if st := state(); st != jobs.Queued {
		t.Fatalf("a Retry's message of the record: %s", st)
	}
	x.set(entry{id: id, state: jobs.Failed, t: 25, seq: 8}) // read again: the retry still wins
	if st := state(); st != jobs.Queued {
		t.Fatalf("the retried record read again: %s", st)
	}
	x.set(entry{id: id, state: jobs.Running, t: 31, seq: 11})
	if st := state(); st != jobs.Running {
		t.Fatalf("the retried job's run: %s", st)
	}
	if c := x.counts(nil); len(c) != 1 || c[jobs.Running] != 1 {
		t.Fatalf("counts %v", c)
	}
	x.remove(id, 12, false)
	if c := x.counts(nil); len(c) != 0 || x.size() != 0 {
		t.Fatalf("after a delete: counts %v, size %d", c, x.size())
	}
}

// TestIndexPages: newest first by (time, id), across out-of-order
// arrivals, moves (stale items swept) and expiry; a waiting job's message
// delivered is running.
func TestIndexPages(t *testing.T) {
	x := newIndex()
	const n = 5000
	for i := range n {
		// Out of order every tenth, as two tails may bring them.
		ti := int64(i)
		if i%10 == 9 {
			ti -= 5
		}
		x.set(entry{id: testKey(i), state: jobs.Succeeded, kind: "k", t: ti, seq: uint64(i + 1)})
	}
	for i := 0; i < n; i += 2 { // half of them move to failed, later
		x.set(entry{id: testKey(i), state: jobs.Failed, kind: "k", t: int64(n + i), seq: uint64(n + i + 1)})
	}
	ok := listIDs(x, jobs.Succeeded, 99, 0)
	failed := listIDs(x, jobs.Failed, 1000, 0)
	if len(ok) != n/2 || len(failed) != n/2 {
		t.Fatalf("listed %d succeeded and %d failed, want %d each", len(ok), len(failed), n/2)
	}
	if got := len(x.lists[0+stateNo(jobs.Succeeded)].items); got > n {
		t.Fatalf("succeeded's list holds %d items for %d jobs: stale items not swept", got, n/2)
	}
	for i := 1; i < len(failed); i++ {
		a, b := x.byID[mustKey(t, failed[i-1])], x.byID[mustKey(t, failed[i])]
		if a.t < b.t {
			t.Fatalf("failed %s (t %d) before %s (t %d)", failed[i-1], a.t, failed[i], b.t)
		}
	}
	if all := listIDs(x, "", 77, 0); len(all) != n {
		t.Fatalf("all states: %d, want %d", len(all), n)
	}
	x.expire(jobs.Failed, int64(n+n/2)) // the first half of the failed expire
	if c := x.counts(nil); c[jobs.Failed] != n/4 || c[jobs.Succeeded] != n/2 {
		t.Fatalf("after expiry: %v", c)
	}

	w := newIndex()
	for i := range 10 {
		w.set(entry{id: testKey(i), state: jobs.Queued, t: int64(i), seq: uint64(i + 1), fromMsg: true})
	}
	if q, r := listIDs(w, jobs.Queued, 3, 4), listIDs(w, jobs.Running, 3, 4); len(q) != 6 || len(r) != 4 {
		t.Fatalf("delivered up to 4 of 10: %d queued, %d running", len(q), len(r))
	}
	if c := w.counts(map[string]uint64{jobs.DefaultQueue: 4}); c[jobs.Queued] != 6 || c[jobs.Running] != 4 {
		t.Fatalf("counts %v", c)
	}
}

func stateNo(st jobs.State) int {
	i, _ := stateIndex(st)
	return int(i)
}

func mustKey(t *testing.T, id string) jobKey {
	k, ok := keyOf(id)
	if !ok {
		t.Fatalf("not an id: %q", id)
	}
	return k
}

// FuzzCursor: a cursor parses back to what made it, and anything else is
// refused or parsed without a panic.
func FuzzCursor(f *testing.F) {
	f.Add("1.0123456789abcdef")
	f.Add("zzzzzzzzzzzzz.0123456789abcdef")
	f.Fuzz(func(t *testing.T, s string) {
		it, ok := parseCursor(s)
		if ok && cursor(it) != s {
			if back, _ := parseCursor(cursor(it)); back != it {
				t.Fatalf("%q parsed as %+v, written as %q", s, it, cursor(it))
			}
		}
	})
}

// TestIndexEvicts: the jobs whose records lie below the bucket's first
// sequence (removed when it was full) leave the index, in every state,
// and the others stay; a waiting job's message is not a record and stays.
func TestIndexEvicts(t *testing.T) {
	x := newIndex()
	for i := range 100 {
		st := jobs.Succeeded
		if i%4 == 0 {
			st = jobs.Failed
		}
		x.set(entry{id: testKey(i), state: st, t: int64(i), seq: uint64(i + 1)})
	}
	x.set(entry{id: testKey(1000), state: jobs.Queued, t: 0, seq: 1, fromMsg: true})
	x.evict(51) // records 1..50 are gone
	if c := x.counts(nil); c[jobs.Succeeded]+c[jobs.Failed] != 50 || c[jobs.Queued] != 1 || x.size() != 51 {
		t.Fatalf("after evicting below 51: counts %v, size %d; want 50 records and the waiting job", c, x.size())
	}
	for _, id := range listIDs(x, "", 7, 0) {
		if s := x.byID[mustKey(t, id)]; !s.fromMsg && s.seq < 51 {
			t.Fatalf("job %s (record %d) still listed", id, s.seq)
		}
	}
}

// TestIndexEndsPerMinute: ends counted in the minute of their record, by
// state; a job that ended and was retried since counts no more; what ended
// before the span or is not ended counts nowhere.
func TestIndexEndsPerMinute(t *testing.T) {
	x := newIndex()
	now := time.Date(2026, 11, 28, 12, 30, 20, 0, time.UTC)
	at := func(min, sec int) int64 {
		return now.Truncate(time.Minute).Add(time.Duration(min)*time.Minute + time.Duration(sec)*time.Second).UnixNano()
	}
	x.set(entry{id: testKey(1), state: jobs.Succeeded, t: at(0, 5), seq: 1})   // this minute
	x.set(entry{id: testKey(2), state: jobs.Succeeded, t: at(-1, 59), seq: 2}) // the minute before
	x.set(entry{id: testKey(3), state: jobs.Failed, t: at(-1, 0), seq: 3})
	x.set(entry{id: testKey(4), state: jobs.TimedOut, t: at(-2, 30), seq: 4})
	x.set(entry{id: testKey(5), state: jobs.Succeeded, t: at(-3, 0), seq: 5}) // before the span of 3 minutes
	x.set(entry{id: testKey(6), state: jobs.Running, t: at(0, 1), seq: 6})    // not ended
	x.set(entry{id: testKey(7), state: jobs.Failed, t: at(-1, 10), seq: 7})
	x.set(entry{id: testKey(7), state: jobs.Queued, t: at(0, 10), seq: 8, fromMsg: true, retryOf: 7}) // retried since
	got := x.ends(now, 3)
	want := []jobs.Counts{{jobs.TimedOut: 1}, {jobs.Succeeded: 1, jobs.Failed: 1}, {jobs.Succeeded: 1}}
	if len(got) != 3 {
		t.Fatalf("%d minutes", len(got))
	}
	for i, w := range want {
		if !got[i].Minute.Equal(now.Truncate(time.Minute).Add(time.Duration(i-2)*time.Minute)) || !maps.Equal(got[i].Counts, w) {
			t.Errorf("minute %d: %v %v, want %v", i, got[i].Minute, got[i].Counts, w)
		}
	}
}

// TestIndexEndsMatchTheJobs: after random records, messages, removals and
// evictions, the ends a minute are what a count of the jobs the index
// holds gives, minute by minute.
func TestIndexEndsMatchTheJobs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newIndex()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	base := now.Add(-10 * time.Minute).UnixNano()
	seq := uint64(0)
	for range 20_000 {
		seq++
		id := testKey(1 + rng.IntN(300))
		at := base + rng.Int64N(int64(11*time.Minute))
		switch r := rng.IntN(20); {
		case r == 0:
			x.remove(id, seq, false)
		case r == 1:
			x.evict(seq - uint64(rng.IntN(500)))
		case r < 6:
			x.set(entry{id: id, state: jobs.Queued, t: at, seq: seq, fromMsg: true, retryOf: uint64(rng.IntN(3))})
		default:
			x.set(entry{id: id, state: jobs.States[rng.IntN(len(jobs.States))], t: at, seq: seq})
		}
	}
	want := make([]jobs.Counts, 11)
	for i := range want {
		want[i] = jobs.Counts{}
	}
	first := now.Add(-10 * time.Minute).UnixNano()
	for _, s := range x.byID {
		if st := jobs.States[s.state]; st.Terminal() && s.t >= first {
			want[(s.t-first)/int64(time.Minute)][st]++
		}
	}
	got := x.ends(now, 11)
	for i := range want {
		if !maps.Equal(got[i].Counts, want[i]) {
			t.Errorf("minute %d: %v, want %v", i, got[i].Counts, want[i])
		}
	}
}

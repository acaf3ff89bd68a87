package jsjobs

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
)

// The index of every job a runner can list, in memory, fed by the tails
// of the jobs' stream and the records' bucket (tail.go): no store write
// is spent on it. A job is either a message waiting in the stream (queued,
// scheduled, or running a first run, which writes no record before its
// end) or a record; a record says more than a message, so it wins, but
// for the message of a Retry, which wins over the ended record it retries
// (retryOf is that record's revision). Of two records or two messages of
// a job the later one (by sequence) wins.
//
// Each state keeps its jobs ordered by the time of their latest change
// and their id, the order pages are given in, newest first; a job that
// moves leaves a stale item behind, skipped when read and swept when the
// stale outnumber the live.
type index struct {
	mu      sync.Mutex
	byID    map[jobKey]slot
	lists   []stateList // by the state's place in jobs.States
	kinds   []string
	kindOf  map[string]uint16
	queues  []string // the lanes of jobs waiting (consumerOf("", queue, priority)), by their number in a slot; the default first
	queueOf map[string]uint16
	names   []string // the queues of the jobs, by their number in a slot; the default first
	nameOf  map[string]uint16
}

// jobKey is a job id's 8 bytes.
type jobKey [jobs.IDLen / 2]byte

func keyOf(id string) (jobKey, bool) {
	var k jobKey
	if !jobs.ValidID(id) {
		return k, false
	}
	_, err := hex.Decode(k[:], []byte(id))
	return k, err == nil
}

func (k jobKey) String() string { return hex.EncodeToString(k[:]) }

// slot is where a job is in the index, and what its state rests on.
type slot struct {
	t       int64  // its latest change, Unix ns
	seq     uint64 // its message's stream sequence, or its record's revision
	retryOf uint64 // a Retry's message: the revision of the record it retries
	kind    uint16
	queue   uint16 // a message's lane (index.queues)
	name    uint16 // its queue (index.names)
	state   uint8  // its list
	fromMsg bool
}

// item is a job in a state's list.
type item struct {
	t  int64
	id jobKey
}

func (a item) before(b item) bool {
	return a.t < b.t || a.t == b.t && string(a.id[:]) < string(b.id[:])
}

type stateList struct {
	items []item // ordered by (t, id), stale ones among them
	live  int
	// byMinute counts the live items by the minute of their time, for a
	// terminal state (nil for the others): the ends a minute (ends) read
	// without a walk of the list.
	byMinute map[int64]int
}

// minuteOf is the minute of a time in Unix nanoseconds.
func minuteOf(t int64) int64 { return t / int64(time.Minute) }

// leave counts out a live item of time t that leaves the list (its job
// moved, removed or dropped); the item itself stays until swept.
func (l *stateList) leave(t int64) {
	l.live--
	if l.byMinute != nil {
		m := minuteOf(t)
		if l.byMinute[m]--; l.byMinute[m] <= 0 {
			delete(l.byMinute, m)
		}
	}
}

var nStates = len(jobs.States)

func stateIndex(st jobs.State) (uint8, bool) {
	i := slices.Index(jobs.States, st)
	return uint8(i), i >= 0
}

func newIndex() *index {
	x := &index{byID: make(map[jobKey]slot), kindOf: make(map[string]uint16), lists: make([]stateList, nStates),
		queues: []string{jobs.DefaultQueue}, queueOf: map[string]uint16{jobs.DefaultQueue: 0},
		names: []string{jobs.DefaultQueue}, nameOf: map[string]uint16{jobs.DefaultQueue: 0}}
	for i, st := range jobs.States {
		if st.Terminal() {
			x.lists[i].byMinute = map[int64]int{}
		}
	}
	return x
}

// entry is a job as a tail read it.
type entry struct {
	id      jobKey
	state   jobs.State
	kind    string
	t       int64
	seq     uint64
	retryOf uint64
	fromMsg bool
	queue   string // a message's lane; "" is the default queue's default priority
	name    string // its queue; "" is the default
}

// set puts e in the index, unless what the index has of the job says more
// (the rule above).
func (x *index) set(e entry) {
	st, ok := stateIndex(e.state)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	old, had := x.byID[e.id]
	if had && !supersedes(e, old) {
		return
	}
	kind, ok := x.kindOf[e.kind]
	if !ok {
		kind = uint16(len(x.kinds))
		if int(kind) == 1<<16-1 {
			kind = 0 // past 65,535 kinds, the rest share the first's name
		} else {
			x.kinds = append(x.kinds, e.kind)
			x.kindOf[e.kind] = kind
		}
	}
	queue, name := number(&x.queues, x.queueOf, e.queue), number(&x.names, x.nameOf, e.name)
	if had {
		x.lists[old.state].leave(old.t)
	}
	x.byID[e.id] = slot{t: e.t, seq: e.seq, retryOf: e.retryOf, kind: kind, queue: queue, name: name, state: st, fromMsg: e.fromMsg}
	x.lists[st].add(item{t: e.t, id: e.id})
	if had {
		x.sweep(old.state)
	}
}

// number is the number of name among names ("" is the first's), added if
// new; past 65,535 names, the rest share the first's.
func number(names *[]string, of map[string]uint16, name string) uint16 {
	if name == "" {
		return 0
	}
	n, ok := of[name]
	if !ok && len(*names) < 1<<16-1 {
		n = uint16(len(*names))
		*names = append(*names, name)
		of[name] = n
	}
	return n
}

// supersedes reports whether e says more of its job than old.
func supersedes(e entry, old slot) bool {
	switch {
	case e.fromMsg == old.fromMsg:
		return e.seq > old.seq
	case e.fromMsg: // a message over a record: only a Retry's, of that record
		return e.retryOf != 0 && e.retryOf == old.seq
	default: // a record over a message, but for the record a Retry retries
		return old.retryOf == 0 || e.seq > old.retryOf
	}
}

// stateOf is job k's state as indexed (a message's: queued or
// scheduled), if the index has it.
func (x *index) stateOf(k jobKey) (jobs.State, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.byID[k]
	if !ok {
		return "", false
	}
	return jobs.States[s.state], true
}

// remove drops job id, if its slot is still seq (a record deleted).
func (x *index) remove(id jobKey, seq uint64, fromMsg bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ok := x.byID[id]; ok && s.fromMsg == fromMsg && s.seq <= seq {
		delete(x.byID, id)
		x.lists[s.state].leave(s.t)
		x.sweep(s.state)
	}
}

// expire drops the jobs of state st whose latest change is before t:
// their records have expired in the store (the server removes them
// without a word to the tails).
func (x *index) expire(st jobs.State, before int64) {
	i, _ := stateIndex(st)
	x.mu.Lock()
	defer x.mu.Unlock()
	l := &x.lists[i]
	n, _ := slices.BinarySearchFunc(l.items, before, func(it item, t int64) int {
		if it.t < t {
			return -1
		}
		return 1
	})
	for _, it := range l.items[:n] {
		if s, ok := x.byID[it.id]; ok && s.state == i && s.t == it.t {
			delete(x.byID, it.id)
			l.leave(it.t)
		}
	}
	l.items = slices.Delete(l.items, 0, n)
}

// evict drops the jobs whose record lies below first, the bucket's first
// sequence: the server removed them when the bucket was full (the oldest
// first, without a word to the tails). Each state's list is walked from
// its oldest while its jobs' records are below first: the lists are in
// the order of the records' times, which their sequences follow.
func (x *index) evict(first uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range x.lists {
		l := &x.lists[i]
		n := 0
		for ; n < len(l.items); n++ {
			it := l.items[n]
			if !x.current(uint8(i), it) {
				continue // stale: dropped with the rest of the prefix
			}
			if s := x.byID[it.id]; s.fromMsg || s.seq >= first {
				break
			}
			delete(x.byID, it.id)
			l.leave(it.t)
		}
		l.items = slices.Delete(l.items, 0, n)
	}
}

func (l *stateList) add(it item) {
	l.live++
	if l.byMinute != nil {
		l.byMinute[minuteOf(it.t)]++
	}
	n := len(l.items)
	if n == 0 || !it.before(l.items[n-1]) {
		l.items = append(l.items, it)
		return
	}
	// Out of order (the two tails, or clocks a little apart): rare, and
	// near the end.
	i, _ := slices.BinarySearchFunc(l.items, it, func(a, b item) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	l.items = slices.Insert(l.items, i, it)
}

// sweep drops state st's stale items once they outnumber its live ones.
func (x *index) sweep(st uint8) {
	l := &x.lists[st]
	if stale := len(l.items) - l.live; stale < 1024 || stale < l.live {
		return
	}
	l.items = slices.DeleteFunc(l.items, func(it item) bool { return !x.current(st, it) })
}

// current reports whether it is where its job is now.
func (x *index) current(st uint8, it item) bool {
	s, ok := x.byID[it.id]
	return ok && s.state == st && s.t == it.t
}

// A cursor is the (time, id) of the last job of a page: the next page
// starts below it.
func cursor(it item) string { return strconv.FormatInt(it.t, 36) + "." + it.id.String() }

func parseCursor(s string) (item, bool) {
	ts, id, ok := strings.Cut(s, ".")
	if !ok || len(ts) > 13 {
		return item{}, false
	}
	t, err := strconv.ParseInt(ts, 36, 64)
	k, okID := keyOf(id)
	return item{t: t, id: k}, err == nil && okID && t >= 0
}

// found is a job a page holds: its id and whether its state rests on its
// message (read from the stream) or its record (read from the bucket).
type found struct {
	id      string
	fromMsg bool
	it      item // its place in the order of pages (a Partitioned's merge)
}

// page returns up to limit jobs in state st (any if empty) and of kind
// (any if empty), newest first, below after (from the newest if zero),
// and the cursor after the last. A job whose state rests on its message
// is queued if its queue's consumer has not delivered it (its sequence
// above delivered[queue]), else running.
func (x *index) page(st jobs.State, kind, queue string, after item, limit int, delivered map[string]uint64) ([]found, string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var want []uint8 // the lists that may hold jobs of state st
	if st == "" {
		for i := range nStates {
			want = append(want, uint8(i))
		}
	} else {
		i, _ := stateIndex(st)
		want = append(want, i)
		if st == jobs.Running { // a first run is a message delivered
			q, _ := stateIndex(jobs.Queued)
			want = append(want, q)
		}
	}
	kindNo, anyKind := uint16(0), kind == ""
	if !anyKind {
		k, ok := x.kindOf[kind]
		if !ok {
			return nil, ""
		}
		kindNo = k
	}
	nameNo, anyQueue := uint16(0), queue == ""
	if !anyQueue && queue != jobs.DefaultQueue {
		n, ok := x.nameOf[queue]
		if !ok {
			return nil, ""
		}
		nameNo = n
	}
	// A cursor per list: the next item to look at, from the end.
	next := make([]int, len(want))
	for j, l := range want {
		items := x.lists[l].items
		next[j] = len(items) - 1
		if after != (item{}) {
			n, _ := slices.BinarySearchFunc(items, after, func(a, b item) int {
				if a.before(b) {
					return -1
				}
				return 1
			})
			next[j] = n - 1
		}
	}
	var out []found
	var last item
	for len(out) < limit {
		best := -1
		for j, l := range want {
			if next[j] >= 0 && (best < 0 || x.lists[want[best]].items[next[best]].before(x.lists[l].items[next[j]])) {
				best = j
			}
		}
		if best < 0 {
			return out, ""
		}
		l := want[best]
		it := x.lists[l].items[next[best]]
		next[best]--
		s := x.byID[it.id]
		if !x.current(l, it) || !anyKind && s.kind != kindNo || !anyQueue && s.name != nameNo || !x.inState(s, st, delivered) {
			continue
		}
		out = append(out, found{id: it.id.String(), fromMsg: s.fromMsg, it: it})
		last = it
	}
	for j := range want {
		if next[j] >= 0 {
			return out, cursor(last)
		}
	}
	return out, ""
}

// inState reports whether a job at slot s is in state st (any if empty).
func (x *index) inState(s slot, st jobs.State, delivered map[string]uint64) bool {
	if st == "" {
		return true
	}
	got := jobs.States[s.state]
	if s.fromMsg && got == jobs.Queued && s.seq <= delivered[x.queues[s.queue]] {
		got = jobs.Running
	}
	return got == st
}

// counts counts the jobs in each state.
func (x *index) counts(delivered map[string]uint64) jobs.Counts {
	x.mu.Lock()
	defer x.mu.Unlock()
	c := make(jobs.Counts)
	for i, l := range x.lists {
		if l.live > 0 {
			c[jobs.States[i]] = l.live
		}
	}
	q, _ := stateIndex(jobs.Queued)
	for _, it := range x.lists[q].items {
		if s := x.byID[it.id]; x.current(q, it) && s.fromMsg && s.seq <= delivered[x.queues[s.queue]] {
			c[jobs.Queued]--
			c[jobs.Running]++
		}
	}
	for st, n := range c {
		if n == 0 {
			delete(c, st)
		}
	}
	return c
}

// ends counts the jobs in a terminal state by the minute of their latest
// change, over the minutes before now (the current one last), from each
// terminal state's counts by minute: as many reads as minutes, whatever
// the jobs.
func (x *index) ends(now time.Time, minutes int) []jobs.Ends {
	last := minuteOf(now.UnixNano())
	out := make([]jobs.Ends, minutes)
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range out {
		m := last - int64(minutes-1-i)
		out[i] = jobs.Ends{Minute: time.Unix(0, m*int64(time.Minute)).UTC(), Counts: jobs.Counts{}}
		for j, st := range jobs.States {
			if n := x.lists[j].byMinute[m]; n > 0 {
				out[i].Counts[st] = n
			}
		}
	}
	return out
}

// queueNames are the queues of the jobs indexed, the default first.
func (x *index) queueNames() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.queues)
}

// size is how many jobs the index holds.
func (x *index) size() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.byID)
}

func (x *index) String() string { return fmt.Sprintf("index of %d jobs", x.size()) }

package natsjs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// The journal (WithJournal). A message the Source holds is the server's
// to give to no one else until its lease lapses: a process killed while
// holding messages leaves them to wait out their AckWait, however soon it
// starts again. The journal is a file in which the Source notes each
// delivery it holds, by the reply subject its ack goes to, and each it
// settles; written, not synced (a SIGKILL leaves the kernel's copy; a
// crash of the machine loses the notes, and with them only the early
// return). A Source started on the journal of a killed one hands those
// deliveries back at once, with the nak a stop would have sent, so that
// they run again now, here or on another process.
//
// The rules it keeps:
//   - A delivery is noted held once received, and settled before the
//     journal forgets it: a note missing costs only the early return (the
//     server redelivers after AckWait), never a run.
//   - A nak of a delivery the server has since given to another consumer
//     would run that message twice at once (the server checks only that
//     the message is pending, not whose delivery it is). So a note is
//     handed back only while the killed process's lease on it surely
//     holds: every held lease was renewed within renewAfter of its death
//     (renewLeases), and its death was after its last beat (a line
//     written every beatEvery), so the server keeps it for at least
//     AckWait - renewAfter after that beat. Later notes are dropped and
//     wait out their lease.
//   - One Source at a time: the file is locked while a Source holds it.
//
// Its lines: "+ <reply> <subject>" held, "s <reply>" started (its handler
// called), "- <reply>" settled, "t <unix ns>" a beat. It is rewritten from
// the held messages once it grows past journalCompactAt. A delivery noted
// started was interrupted by the kill: WithRecovered tells the handler's
// owner of it before it is handed back, so that it can count the run.

// beatEvery is how often a running Source writes its beat.
const beatEvery = time.Second

// journalCompactAt is the size past which the journal is rewritten (a
// variable, so that a test makes it small).
var journalCompactAt int64 = 1 << 20

// journalMargin is taken off a killed process's surest lease before its
// notes are handed back: room for a renewal sent late, and for clocks.
const journalMargin = time.Second

type journal struct {
	mu       sync.Mutex
	f        *os.File
	size     int64
	lastBeat time.Time
	closed   bool
	buf      []byte      // note's line
	warned   atomic.Bool // a failed write was logged: once is enough
}

// openJournal opens and locks the journal at path, and returns the
// deliveries a killed Source left noted held, and its last beat.
func openJournal(path string) (*journal, []note, time.Time, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, nil, time.Time{}, fmt.Errorf("journal %s in use by another process: %w", path, err)
	}
	held, beat, err := readJournal(f)
	if err != nil {
		f.Close()
		return nil, nil, time.Time{}, err
	}
	return &journal{f: f}, held, beat, nil
}

// note is a delivery a killed Source left held.
type note struct {
	reply, subject string
	started        bool
}

// readJournal reads the deliveries noted held and not settled, in the
// order they were received, and the last beat.
func readJournal(f *os.File) (held []note, beat time.Time, err error) {
	if _, err := f.Seek(0, 0); err != nil {
		return nil, time.Time{}, err
	}
	live := map[string]int{} // reply -> its place in order
	var order []note
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 2*MaxSubjectLen+64)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) < 3 || line[1] != ' ' {
			continue // a line cut short by the kill
		}
		arg := string(line[2:])
		switch line[0] {
		case '+':
			reply, subject, _ := strings.Cut(arg, " ")
			live[reply] = len(order)
			order = append(order, note{reply: reply, subject: subject})
		case 's':
			if i, ok := live[arg]; ok {
				order[i].started = true
			}
		case '-':
			delete(live, arg)
		case 't':
			if ns, err := strconv.ParseInt(arg, 10, 64); err == nil {
				beat = time.Unix(0, ns)
			}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return nil, time.Time{}, err
	}
	for i, n := range order {
		if j, ok := live[n.reply]; ok && j == i {
			held = append(held, n)
		}
	}
	return held, beat, nil
}

// handBackNoted naks the deliveries a killed Source left held, as a stop
// hands back a message (handBackDelay), if its leases surely hold still
// (see above), each after told (a started one's run was interrupted); it
// returns how many it handed back and dropped.
func handBackNoted(nc *nats.Conn, held []note, beat time.Time, surest time.Duration, now time.Time, told func(note)) (back, dropped int, err error) {
	if len(held) == 0 {
		return 0, 0, nil
	}
	if beat.IsZero() || now.Sub(beat) >= surest-journalMargin {
		return 0, len(held), nil
	}
	nak := []byte(fmt.Sprintf(`-NAK {"delay":%d}`, handBackDelay.Nanoseconds()))
	for _, n := range held {
		if told != nil {
			told(n)
		}
		if err := nc.Publish(n.reply, nak); err != nil {
			return back, len(held) - back, err
		}
		back++
	}
	return back, 0, nc.Flush()
}

// note appends one line, op and its arguments, built in a buffer the
// journal keeps (a line a delivery: no allocation each); a failure is
// returned once, for the log, and the journal goes on (it only speeds a
// return up).
func (j *journal) note(op byte, args ...string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.buf = append(j.buf[:0], op)
	for _, a := range args {
		j.buf = append(append(j.buf, ' '), a...)
	}
	n, err := j.f.Write(append(j.buf, '\n'))
	j.size += int64(n)
	return err
}

// beat writes the beat, at most every beatEvery, and rewrites the journal
// from held (the replies of the messages held now) once it has grown past
// journalCompactAt. held is called with the lock that orders the notes
// (the Source's), which beat's caller holds.
func (j *journal) beat(now time.Time, held func() []note) error {
	j.mu.Lock()
	due := now.Sub(j.lastBeat) >= beatEvery
	big := j.size >= journalCompactAt
	if due && !big {
		j.lastBeat = now
	}
	j.mu.Unlock()
	switch {
	case big:
		return j.rewrite(held(), now)
	case due:
		return j.note('t', strconv.FormatInt(now.UnixNano(), 10))
	}
	return nil
}

// rewrite replaces the journal's lines with a beat and held. A kill
// halfway loses notes, and with them only their early return.
func (j *journal) rewrite(held []note, now time.Time) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "t %d\n", now.UnixNano())
	for _, n := range held {
		fmt.Fprintf(&b, "+ %s %s\n", n.reply, n.subject)
		if n.started {
			fmt.Fprintf(&b, "s %s\n", n.reply)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	if err := j.f.Truncate(0); err != nil {
		return err
	}
	n, err := j.f.WriteAt(b.Bytes(), 0)
	if err == nil {
		_, err = j.f.Seek(int64(n), 0)
	}
	j.size, j.lastBeat = int64(n), now
	return err
}

// close empties the journal (a Source that stopped holds nothing) and
// releases it.
func (j *journal) close(empty bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	var err error
	if empty {
		err = j.f.Truncate(0)
	}
	return errors.Join(err, j.f.Close())
}

// recover hands back what a killed Source left noted held (Run, before
// its first pull).
func (s *Source) recover() {
	held, beat := s.noted, s.notedBeat
	s.noted = nil
	var told func(note)
	if s.o.recovered != nil {
		told = func(n note) {
			ctx, cancel := context.WithTimeout(context.Background(), recoveredWait)
			defer cancel()
			s.o.recovered(ctx, Recovered{Subject: n.subject, Started: n.started, Delivered: deliveredOf(n.reply)})
		}
	}
	back, dropped, err := handBackNoted(s.o.conn, held, beat, s.ackWait-s.renewAfter-s.tickEvery, time.Now(), told)
	s.c.recovered.Add(uint64(back))
	s.c.unrecovered.Add(uint64(dropped))
	if err == nil {
		err = s.journal.rewrite(nil, time.Now())
	}
	if s.o.logger == nil {
		return
	}
	if back > 0 || dropped > 0 {
		s.o.logger.Info("natsjs: deliveries held by a killed process, from its journal", "stream", s.stream, "consumer", s.consumer,
			"handed_back", back, "left_to_their_lease", dropped, "last_beat", beat)
	}
	if err != nil {
		s.o.logger.Warn("natsjs: journal", "error", err)
	}
}

// noteJournal notes one delivery held (op '+') or settled ('-'); s.mu is
// held, so that the notes of one delivery come in order and a rewrite
// (beatJournal) comes between them or not at all.
func (s *Source) noteJournal(op byte, args ...string) {
	if err := s.journal.note(op, args...); err != nil && s.o.logger != nil && !s.journal.warned.Swap(true) {
		s.o.logger.Warn("natsjs: journal note failed; a kill now leaves the delivery to its lease", "error", err)
	}
}

// beatJournal writes the beat, and rewrites a journal grown large from
// the messages held now (Run's tick).
func (s *Source) beatJournal(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.journal.beat(now, func() []note {
		held := make([]note, 0, s.held)
		for m := s.head; m != nil; m = m.next {
			held = append(held, note{reply: m.raw.Reply(), subject: m.raw.Subject(), started: m.state.Load() != waiting})
		}
		return held
	})
	if err != nil && s.o.logger != nil {
		s.o.logger.Warn("natsjs: journal beat failed", "error", err)
	}
}

// closeJournal empties and releases the journal at Run's end, when the
// Source holds nothing.
func (s *Source) closeJournal() {
	s.mu.Lock()
	empty := s.held == 0
	s.mu.Unlock()
	if err := s.journal.close(empty); err != nil && s.o.logger != nil {
		s.o.logger.Warn("natsjs: journal close", "error", err)
	}
}

// recoveredWait bounds WithRecovered's function, a delivery each.
const recoveredWait = 5 * time.Second

// Recovered is a delivery a killed Source held, which the Source started
// on its journal hands back (WithRecovered).
type Recovered struct {
	Subject   string // the message's subject
	Started   bool   // its handler had been called: its run was interrupted by the kill
	Delivered int    // that delivery's count, 1 for the first (0: not known)
}

// deliveredOf is the delivery count in an ack's reply subject, 0 when it
// has none that can be read.
func deliveredOf(reply string) int {
	// $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>,
	// with a domain and an account hash after $JS.ACK in the newer form.
	toks := strings.Split(reply, ".")
	i := 4
	if len(toks) >= 12 {
		i = 6
	}
	if len(toks) <= i {
		return 0
	}
	n, _ := strconv.Atoi(toks[i])
	return n
}

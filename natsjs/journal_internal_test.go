package natsjs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestJournalReadsWhatWasHeld: the notes held and not settled come back in
// the order received, with their subjects and whether they had started; a
// note cut short by the kill is skipped, and the last beat is read.
func TestJournalReadsWhatWasHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held")
	text := "t 1000\n+ a jobs.1\n+ b jobs.2\n- a\ns b\n+ c jobs.3\nt 2000\n+ b jobs.2\n- c\n+ d jobs.4\n+"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	j, held, beat, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close(false)
	want := []note{{reply: "b", subject: "jobs.2"}, {reply: "d", subject: "jobs.4"}}
	if !slices.Equal(held, want) {
		t.Errorf("held %+v, want %+v (b held again after it started: a new delivery)", held, want)
	}
	if !beat.Equal(time.Unix(0, 2000)) {
		t.Errorf("beat %v, want 2000 ns", beat)
	}
}

// TestJournalHandsBackOnlyLeasesThatHold: notes are handed back only while
// the killed process's leases surely hold (its last beat less than the
// surest lease ago, less a margin); older ones, or a journal without a
// beat, are left to their lease, and none is told.
func TestJournalHandsBackOnlyLeasesThatHold(t *testing.T) {
	now := time.Now()
	surest := 14 * time.Second
	for _, tc := range []struct {
		name string
		beat time.Time
	}{
		{"no beat", time.Time{}},
		{"beat past the surest lease", now.Add(-surest)},
		{"beat within the margin of it", now.Add(-surest + journalMargin/2)},
	} {
		told := 0
		back, dropped, err := handBackNoted(nil, []note{{reply: "a"}, {reply: "b"}}, tc.beat, surest, now, func(note) { told++ })
		if back != 0 || dropped != 2 || err != nil || told != 0 {
			t.Errorf("%s: handed back %d, dropped %d, told %d, %v; want 0, 2, 0, nil", tc.name, back, dropped, told, err)
		}
	}
}

// TestJournalRewriteKeepsWhatIsHeld: a rewrite leaves a beat and the held
// notes, started ones said so, and notes after it append.
func TestJournalRewriteKeepsWhatIsHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held")
	j, _, _, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := j.note('+', "x jobs.x"); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.rewrite([]note{{reply: "a", subject: "jobs.1"}, {reply: "b", subject: "jobs.2", started: true}}, time.Unix(0, 5)); err != nil {
		t.Fatal(err)
	}
	if err := j.note('-', "a"); err != nil {
		t.Fatal(err)
	}
	if err := j.close(false); err != nil {
		t.Fatal(err)
	}
	j, held, beat, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close(true)
	if want := []note{{reply: "b", subject: "jobs.2", started: true}}; !slices.Equal(held, want) || !beat.Equal(time.Unix(0, 5)) {
		t.Fatalf("after a rewrite: held %+v beat %v, want %+v and 5 ns", held, beat, want)
	}
}

// TestDeliveredOfTheReply: the delivery count is read from both forms of an
// ack's reply subject.
func TestDeliveredOfTheReply(t *testing.T) {
	for reply, want := range map[string]int{
		"$JS.ACK.jobs.crewd.3.1042.1050.1764339000000000000.7":                 3,
		"$JS.ACK.hub.ACCHASH.jobs.crewd.2.1042.1050.1764339000000000000.7.tok": 2,
		"garbage": 0,
	} {
		if got := deliveredOf(reply); got != want {
			t.Errorf("deliveredOf(%q) = %d, want %d", reply, got, want)
		}
	}
}

package natsjs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestJournalReadsWhatWasHeld: the notes held and not settled come back in
// the order received, a note cut short by the kill is skipped, and the last
// beat is read.
func TestJournalReadsWhatWasHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held")
	text := "t 1000\n+ a\n+ b\n- a\n+ c\nt 2000\n+ b\n- c\n+ d\n+"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	j, held, beat, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close(false)
	if want := []string{"b", "d"}; !slices.Equal(held, want) {
		t.Errorf("held %q, want %q", held, want)
	}
	if !beat.Equal(time.Unix(0, 2000)) {
		t.Errorf("beat %v, want 2000 ns", beat)
	}
}

// TestJournalHandsBackOnlyLeasesThatHold: notes are handed back only while
// the killed process's leases surely hold (its last beat less than the
// surest lease ago, less a margin); older ones, or a journal without a
// beat, are left to their lease.
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
		back, dropped, err := handBackNoted(nil, []string{"a", "b"}, tc.beat, surest, now)
		if back != 0 || dropped != 2 || err != nil {
			t.Errorf("%s: handed back %d, dropped %d, %v; want 0, 2, nil", tc.name, back, dropped, err)
		}
	}
}

// TestJournalRewriteKeepsWhatIsHeld: a rewrite leaves a beat and the held
// notes, and notes after it append.
func TestJournalRewriteKeepsWhatIsHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held")
	j, _, _, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := j.note('+', "x"); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.rewrite([]string{"a", "b"}, time.Unix(0, 5)); err != nil {
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
	if !slices.Equal(held, []string{"b"}) || !beat.Equal(time.Unix(0, 5)) {
		t.Fatalf("after a rewrite: held %q beat %v, want [b] and 5 ns", held, beat)
	}
}

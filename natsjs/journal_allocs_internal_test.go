package natsjs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// NATSJS_TEST_COMPACT_AT makes the journal of a worker process of the
// tests rewrite itself past that many bytes, so that a run of thousands of
// jobs rewrites it many times.
func init() {
	if n, err := strconv.ParseInt(os.Getenv("NATSJS_TEST_COMPACT_AT"), 10, 64); err == nil && n > 0 {
		journalCompactAt = n
	}
}

// TestJournalNoteAllocs: noting a delivery held and settled, as every
// delivery is with a journal, allocates nothing.
func TestJournalNoteAllocs(t *testing.T) {
	j, _, _, err := openJournal(filepath.Join(t.TempDir(), "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.close(true)
	reply, subj := "$JS.ACK.jobs.crewd.1.2.3.4.5", "jobs.0123456789abcdef"
	_ = j.note('+', reply, subj)
	if n := testing.AllocsPerRun(100, func() { _ = j.note('+', reply, subj); _ = j.note('-', reply) }); n != 0 {
		t.Fatalf("%v allocations a note", n)
	}
}

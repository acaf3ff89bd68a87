package auth

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// CheckEvery is how often a File looks whether its file changed: a
// rotated token is taken, and a removed one refused, within about that.
const CheckEvery = time.Second

// File is a token file, read again when it changes: a request looks at
// most once every CheckEvery (a stat; the file is read only when its
// size, time or inode changed), and the requests meanwhile use the tokens
// read before. A file that changed into something unreadable or invalid
// is said in the log, once, and the tokens read before stay in use until
// it is fixed: a half-written file must not lock every client out. Write
// the file by renaming a new one over it (as a Kubernetes Secret's volume
// does), not in place.
type File struct {
	path string
	log  *slog.Logger
	now  func() time.Time // time.Now; a test's clock

	tokens atomic.Pointer[Tokens]
	next   atomic.Int64 // when to look again, in Unix nanoseconds

	mu   sync.Mutex  // one look at a time
	seen os.FileInfo // the file as last read, or tried
}

// Open reads the token file at path; its error says what is wrong with
// it. log, if not nil, hears of the file's later changes.
func Open(path string, log *slog.Logger) (*File, error) {
	return open(path, log, time.Now)
}

func open(path string, log *slog.Logger, now func() time.Time) (*File, error) {
	f := &File{path: path, log: log, now: now}
	t, fi, err := f.read()
	if err != nil {
		return nil, err
	}
	f.tokens.Store(t)
	f.seen = fi
	f.next.Store(now().Add(CheckEvery).UnixNano())
	return f, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Tokens are the file's tokens as last read, read again first if the
// file changed and it is time to look.
func (f *File) Tokens() *Tokens {
	now := f.now().UnixNano()
	if next := f.next.Load(); now >= next && f.next.CompareAndSwap(next, now+int64(CheckEvery)) {
		f.look()
	}
	return f.tokens.Load()
}

// look reads the file again if it changed since it was last read.
func (f *File) look() {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Stat(f.path)
	if err != nil {
		if f.seen != nil {
			f.seen = nil
			f.warn("cannot be read: the tokens read before stay in use", err)
		}
		return
	}
	if f.seen != nil && same(f.seen, fi) {
		return
	}
	t, read, err := f.read()
	switch {
	case err != nil:
		f.seen = fi
		f.warn("changed and cannot be used: the tokens read before stay in use", err)
	case !same(fi, read):
		// Changed while it was read: looked at again next time.
	default:
		f.seen = read
		f.tokens.Store(t)
		if f.log != nil {
			f.log.Info("api tokens read again", "file", f.path, "tokens", t.Len())
		}
	}
}

func (f *File) warn(what string, err error) {
	if f.log != nil {
		f.log.Error("api tokens: "+f.path+" "+what, "error", err.Error())
	}
}

// read reads and parses the file, and stats it after: the tokens are
// those of the file as that stat sees it only if nothing changed between.
func (f *File) read() (*Tokens, os.FileInfo, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, nil, err
	}
	fi, err := os.Stat(f.path)
	if err != nil {
		return nil, nil, err
	}
	t, err := ParseTokens(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.path, err)
	}
	return t, fi, nil
}

func same(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

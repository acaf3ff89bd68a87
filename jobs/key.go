package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Idempotency keys (the Idempotency-Key header of POST /v1/jobs): a client
// that lost the answer to a job it posted sends the same request again
// with the same key, and is answered with the same job rather than given a
// second one. The key is the client's, so it never becomes part of a
// subject or a key as it is: only its SHA-256 does.

// KeyedTimeout bounds a keyed submit, which its client's going away does
// not cut short: its retry will ask for the same job.
const KeyedTimeout = 10 * time.Second

// MaxKeyLen bounds an idempotency key.
const MaxKeyLen = 255

// ErrKeyReused refuses a job posted under an idempotency key that an
// earlier job with another request was posted under.
var ErrKeyReused = errors.New("idempotency key reused for another request")

// CheckKey refuses an idempotency key that is empty, longer than
// MaxKeyLen, or not printable ASCII.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return &InvalidError{fmt.Sprintf("idempotency key of %d bytes: want 1 to %d printable ASCII characters (a UUID, say)", len(key), MaxKeyLen)}
	}
	for i := range len(key) {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return &InvalidError{fmt.Sprintf("idempotency key: byte %d is 0x%02x; want printable ASCII characters (a UUID, say)", i, c)}
		}
	}
	return nil
}

// KeyHash is what stands for a key wherever it is kept.
func KeyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// Fingerprint tells two requests apart: the spec as Encode wrote it, with
// its timeout, so that field order and a default spelled out do not matter.
func Fingerprint(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}

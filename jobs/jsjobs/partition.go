package jsjobs

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"

	"github.com/crew-go/crew/jobs"
)

// A job's partition is in its id (Partitioned): its first byte, written
// by the Runner of that partition when it makes the id (newID, tickID).
// A Runner that is no partition of a Partitioned (partition -1) makes
// ids all random, as stores made before partitions did; those stores
// become a Partitioned store's partition 0, so an id whose first byte
// names a partition that does not hold it is looked up in partition 0
// (Partitioned.runnerOf).

// MaxPartitions bounds a store's partitions: a byte of the id.
const MaxPartitions = 256

// newID makes a job id in r's partition.
func (r *Runner) newID() string {
	var b [jobs.IDLen / 2]byte
	_, _ = rand.Read(b[:])
	if r.partition >= 0 {
		b[0] = byte(r.partition)
	}
	return hex.EncodeToString(b[:])
}

// partitionOf is the partition id names: its first byte; -1 for no id.
func partitionOf(id string) int {
	if !jobs.ValidID(id) {
		return -1
	}
	n, err := strconv.ParseUint(id[:2], 16, 8)
	if err != nil {
		return -1
	}
	return int(n)
}

// partitionNames are the stream and bucket of partition k of a store
// named stream and bucket: partition 0 keeps the names (a store made
// before partitions is partition 0), partition k > 0 adds "-k".
func partitionNames(stream, bucket string, k int) (string, string) {
	if k == 0 {
		return stream, bucket
	}
	suffix := "-" + strconv.Itoa(k)
	return stream + suffix, bucket + suffix
}

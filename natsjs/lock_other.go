//go:build !unix

package natsjs

import "os"

// lockFile does nothing where flock does not exist: give each Source a
// journal of its own there.
func lockFile(*os.File) error { return nil }

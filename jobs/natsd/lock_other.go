//go:build !unix

package natsd

import "os"

// lockFile does nothing where flock does not exist: run one crewd per data
// directory there.
func lockFile(*os.File) error { return nil }

// Command crewrelease prepares a release of crew's modules: it sets every
// published go.mod's requirements of the other modules to the release's
// version and prints the tags to push, in order.
//
//	go run ./release/cmd/crewrelease -version v0.1.0   # from the repository's root
//
// Commit the go.mod files it changed, tag that commit as printed, then set
// the requirements back to the placeholder for development:
//
//	go run ./release/cmd/crewrelease -version v0.0.0-00010101000000-000000000000
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/crew-go/crew/release"
	"golang.org/x/mod/semver"
)

func main() {
	version := flag.String("version", "", "the release's version, vX.Y.Z")
	flag.Parse()
	if !semver.IsValid(*version) || semver.Canonical(*version) != *version {
		fmt.Fprintf(os.Stderr, "crewrelease: -version %q: want a version such as v0.1.0\n", *version)
		os.Exit(2)
	}
	for _, m := range release.Modules {
		if _, err := release.SetVersion(filepath.Join(m.Dir, "go.mod"), *version); err != nil {
			fmt.Fprintln(os.Stderr, "crewrelease:", err)
			os.Exit(1)
		}
	}
	if *version == release.Placeholder {
		fmt.Println("requirements set back to the placeholder; go.work points it at the tree")
		return
	}
	fmt.Println("go.mod files set to", *version+"; commit them, then tag that commit in this order and push the tags:")
	for _, m := range release.Modules {
		fmt.Printf("  git tag %s%s\n", m.Tag, *version)
	}
	fmt.Println("  git push origin", "--tags")
}

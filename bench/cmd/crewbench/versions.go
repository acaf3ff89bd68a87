package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// libraries lists the versions of the contenders' modules from the build
// info, and crew's commit.
func libraries(modDir string) []string {
	var out []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			switch dep.Path {
			case "github.com/alitto/pond/v2", "github.com/panjf2000/ants/v2", "github.com/sourcegraph/conc",
				"github.com/gammazero/workerpool", "golang.org/x/sync":
				out = append(out, dep.Path+" "+dep.Version)
			case "github.com/crew-go/crew":
				v := dep.Version
				if dep.Replace != nil {
					v = crewVersion(modDir)
				}
				out = append(out, "github.com/crew-go/crew "+v+" at report time (each scenario names the crew it measured)")
			}
		}
	}
	return out
}

// crewVersion names the local crew the bench module builds against
// (replace => ../): its commit, and whether the core had uncommitted
// changes.
func crewVersion(modDir string) string {
	rev, err := exec.Command("git", "-C", modDir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "(local ../)"
	}
	v := "(local, commit " + strings.TrimSpace(string(rev))
	if st, err := exec.Command("git", "-C", filepath.Dir(modDir), "status", "--porcelain", "--", ":(glob)*.go").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		v += " with uncommitted core changes"
	}
	return v + ")"
}

package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// BuildProxy writes, under dir, a module proxy (the layout GOPROXY=file://
// reads) holding each of mods at version, built from the files git tracks
// under root, with every requirement of another module of the repository
// set to version. A go command that uses it installs the modules as users
// would once they are tagged.
func BuildProxy(root, dir, version string, mods []Module) error {
	all := append(append([]Module{}, Modules...), Unpublished...)
	for _, m := range mods {
		src, err := os.MkdirTemp("", "crew-release-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(src)
		if err := copyModule(root, m, all, src); err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
		gomod, err := SetVersion(filepath.Join(src, "go.mod"), version)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			return err
		}
		at := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			return err
		}
		var z bytes.Buffer
		if err := zip.CreateFromDir(&z, module.Version{Path: m.Path, Version: version}, src); err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
		info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
		files := map[string][]byte{version + ".zip": z.Bytes(), version + ".mod": gomod, version + ".info": info}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(at, name), b, 0o644); err != nil {
				return err
			}
		}
		list := filepath.Join(at, "list")
		old, _ := os.ReadFile(list)
		if err := os.WriteFile(list, append(old, []byte(version+"\n")...), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyModule copies the files git tracks in m's directory, less those of
// the modules nested in it, into dst.
func copyModule(root string, m Module, all []Module, dst string) error {
	out, err := exec.Command("git", "-C", filepath.Join(root, m.Dir), "ls-files", "-z", ".").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		rel := filepath.ToSlash(filepath.Join(m.Dir, f))
		if nested(rel, m, all) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		to := filepath.Join(dst, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// nested reports whether the file at rel belongs to a module nested in m.
func nested(rel string, m Module, all []Module) bool {
	for _, o := range all {
		if o.Dir == m.Dir {
			continue
		}
		inM := m.Dir == "." || strings.HasPrefix(o.Dir, m.Dir+"/")
		if inM && strings.HasPrefix(rel, o.Dir+"/") {
			return true
		}
	}
	return false
}

// SetVersion rewrites the go.mod file at path so that it requires every
// module of the repository at version, and returns the new contents.
func SetVersion(path, version string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(path, b, nil)
	if err != nil {
		return nil, err
	}
	ours := map[string]bool{}
	for _, m := range append(append([]Module{}, Modules...), Unpublished...) {
		ours[m.Path] = true
	}
	for _, r := range f.Require {
		if ours[r.Mod.Path] {
			if err := f.AddRequire(r.Mod.Path, version); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range f.Replace {
		if ours[r.Old.Path] {
			return nil, fmt.Errorf("%s replaces %s: a published go.mod carries no replace", path, r.Old.Path)
		}
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return nil, err
	}
	return out, os.WriteFile(path, out, 0o644)
}

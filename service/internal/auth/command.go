package auth

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Command runs "crewd token ARGS": "new -name NAME -scopes SCOPES [-file
// FILE]" makes a token. It prints the token, once, on stdout; with -file
// it adds the token's line to FILE (made, readable by its owner only, if
// missing; a name already there is refused), else it prints the line on
// stdout after the token, to be added by hand. It returns the exit code.
func Command(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "new" {
		fmt.Fprintln(stderr, "usage: crewd token new -name NAME -scopes jobs:read,jobs:submit,jobs:admin [-file TOKENS]")
		return 2
	}
	fs := flag.NewFlagSet("crewd token new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the token's name: who holds it (logged, and recorded as the submitter of its jobs)")
	list := fs.String("scopes", "", "what it may do, comma-separated: "+scopeNames())
	file := fs.String("file", "", "the token file (crewd -api-tokens) to add its line to; empty: print the line")
	if err := fs.Parse(args[1:]); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "crewd token new: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	token, line, err := New(*name, *list)
	if err != nil {
		fmt.Fprintf(stderr, "crewd token new: %v\n", err)
		return 2
	}
	if *file == "" {
		fmt.Fprintln(stdout, token)
		fmt.Fprintln(stdout, line)
		fmt.Fprintln(stderr, "crewd token new: the first line is the token, shown this once: give it to its holder; add the second to the token file (-api-tokens)")
		return 0
	}
	if err := appendLine(*file, *name, line); err != nil {
		fmt.Fprintf(stderr, "crewd token new: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, token)
	return 0
}

// appendLine adds line, the token name's, to the token file at path, by
// a new file renamed over it: a crewd reading it meanwhile sees the file
// before or after, never half of it.
func appendLine(path, name, line string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if _, err := ParseTokens(bytes.NewReader(old)); err != nil {
		return fmt.Errorf("%s: %v: fix it first", path, err)
	}
	for l := range strings.Lines(string(old)) {
		if fields := strings.Fields(l); len(fields) > 0 && fields[0] == name {
			return fmt.Errorf("%s: a token named %s is there already: remove its line first, or choose another name", path, name)
		}
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tokens-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	if _, err := tmp.Write(append(old, line+"\n"...)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

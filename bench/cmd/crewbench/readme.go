package main

import (
	"fmt"
	"os"
	"strings"
)

// Markers around the part of the repository's README that a full run
// rewrites.
const (
	readmeStart = "<!-- bench:start (written by cd bench && go run ./cmd/crewbench) -->"
	readmeEnd   = "<!-- bench:end -->"
)

// updateReadme copies the headline table from RESULTS.md between the
// markers of the README, one heading level down, with a line pointing at
// the rest (where crew loses, the goals, each scenario) in RESULTS.md.
func updateReadme(readme, results string) error {
	res, err := os.ReadFile(results)
	if err != nil {
		return err
	}
	section, err := readmeSection(string(res))
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	text := string(doc)
	i, j := strings.Index(text, readmeStart), strings.Index(text, readmeEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q ... %q markers", readme, readmeStart, readmeEnd)
	}
	text = text[:i+len(readmeStart)] + "\n" + section + text[j:]
	return os.WriteFile(readme, []byte(text), 0o644)
}

// readmeSection is RESULTS.md's headline section, with links made
// relative to the repository's root, and a line pointing at the rest.
func readmeSection(results string) (string, error) {
	i := strings.Index(results, "## Headline")
	if i < 0 {
		return "", fmt.Errorf("RESULTS.md has no headline section")
	}
	j := strings.Index(results[i+1:], "\n## ")
	if j < 0 {
		return "", fmt.Errorf("RESULTS.md has nothing after its headline")
	}
	s := "#" + results[i:i+1+j+1]
	s = strings.ReplaceAll(s, "](charts/", "](bench/charts/")
	return s + readmeMore, nil
}

// readmeMore follows the headline in the README.
const readmeMore = "Where crew loses (every configuration a peer wins by more than 5 %), the goals met and missed, and each scenario's\n" +
	"figures are in [bench/RESULTS.md](bench/RESULTS.md).\n\n"

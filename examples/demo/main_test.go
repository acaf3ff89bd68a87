package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDemoTellsItsStory: the numbers the demo prints can be squared with
// what it says it did: the resize is said before the bound changes, and the
// batch's line says how the pool counted it.
func TestDemoTellsItsStory(t *testing.T) {
	var out strings.Builder
	if err := run(&out, 2, 1000, 8, false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"batch stopped after",
		"in the pool's counts: ",
		"resized from 2 to 8 workers",
		"bound 8",
		"in flight 0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("demo output lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "resized from") > strings.Index(got, "bound 8") {
		t.Errorf("the bound changed before the demo said it resized:\n%s", got)
	}
}

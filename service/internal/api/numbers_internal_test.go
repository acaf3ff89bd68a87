package api

import (
	"encoding/json"
	"testing"
)

// FuzzElements: for any whole JSON value, elements is the length of the
// array it is, or 0 if it is not one, as encoding/json decodes it.
func FuzzElements(f *testing.F) {
	for _, s := range []string{`[]`, ` [ ] `, `[1]`, `[1,2,3]`, `[[1,2],{"a":[3,4]},"x,y]",5]`, `["\"],[",1]`, `{"a":[1,2]}`, `"[1,2]"`, `null`, `12`, "[\n1 ,\t2\r]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return // the decoder hands UnmarshalJSON only whole values
		}
		want := 0
		if a, ok := v.([]any); ok {
			want = len(a)
		}
		if got := elements([]byte(s)); got != want {
			t.Fatalf("elements(%q) = %d, want %d", s, got, want)
		}
	})
}

package api

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIDescribesEveryRoute: openapi.json names every route, every
// method of it and no other, each with the scope the route asks for (none
// for the probes and the document itself), and only routes there are.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi.json: %v, version %q", err, doc.OpenAPI)
	}
	a := &API{}
	seen := map[string]bool{}
	for _, rt := range a.routes() {
		seen[rt.pattern] = true
		ops, ok := doc.Paths[rt.pattern]
		if !ok {
			t.Errorf("openapi.json lacks %s", rt.pattern)
			continue
		}
		var described []string
		for m := range ops {
			if m != "parameters" {
				described = append(described, strings.ToUpper(m))
			}
		}
		if want := slices.Sorted(maps.Keys(rt.methods)); !slices.Equal(slices.Sorted(slices.Values(described)), want) {
			t.Errorf("%s: openapi.json describes %v, the route serves %v", rt.pattern, described, want)
		}
		for m, e := range rt.methods {
			var op struct {
				Security []map[string][]string
			}
			if err := json.Unmarshal(ops[strings.ToLower(m)], &op); err != nil {
				t.Fatal(err)
			}
			var scopes []string
			for _, s := range op.Security {
				scopes = append(scopes, s["bearer"]...)
			}
			want := []string(nil)
			if e.scope != "" {
				want = []string{string(e.scope)}
			}
			if !slices.Equal(scopes, want) {
				t.Errorf("%s %s: openapi.json asks for %v, the route for %v", m, rt.pattern, scopes, want)
			}
		}
	}
	for p := range doc.Paths {
		if !seen[p] {
			t.Errorf("openapi.json describes %s, which is no route", p)
		}
	}
}

package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/crew-go/crew/jobs/jsjobs"
)

// TestBundledNATSConfigsGrantPermissionsFor: the NATS configs this
// repository ships (compose's, and the kustomize base's, which check.sh
// holds equal to the chart's) grant crewd's user exactly
// jsjobs.PermissionsFor the stream and bucket they run ("jobs"): a
// subject the library starts to use, or one given beyond it, fails here
// before a cluster does.
func TestBundledNATSConfigsGrantPermissionsFor(t *testing.T) {
	want := jsjobs.PermissionsFor("jobs", "jobs")
	list := func(conf, key string) []string {
		m := regexp.MustCompile(`(?s)` + key + `: \[(.*?)\]`).FindStringSubmatch(conf)
		if m == nil {
			return nil
		}
		var out []string
		for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(m[1], -1) {
			out = append(out, q[1])
		}
		return out
	}
	for _, file := range []string{"deploy/compose/nats/nats.conf", "deploy/kustomize/base/nats.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		conf := string(data)
		if !strings.Contains(conf, "password: $CREWD_NATS_PASSWORD") {
			t.Errorf("%s: crewd's password is not the environment's", file)
		}
		for key, subjects := range map[string][]string{"publish": want.Publish, "subscribe": want.Subscribe} {
			got := list(conf, key)
			if !slices.Equal(got, subjects) {
				t.Errorf("%s grants crewd %s\n%q\nwant jsjobs.PermissionsFor(jobs, jobs)'s\n%q", file, key, got, subjects)
			}
		}
	}
}

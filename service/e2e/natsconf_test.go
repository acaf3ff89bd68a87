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
// holds equal to the chart's default render) grant crewd's user exactly
// what the store they run needs: three partitions
// (jsjobs.PartitionedPermissionsFor, CREW_JOB_PARTITIONS 3 in both): a
// subject the library starts to use, or one given beyond it, fails here
// before a cluster does. (chart_test.go renders the chart's for other
// numbers of partitions.)
func TestBundledNATSConfigsGrantPermissionsFor(t *testing.T) {
	for file, want := range map[string]jsjobs.Permissions{
		"deploy/compose/nats/nats.conf":   jsjobs.PartitionedPermissionsFor("jobs", "jobs", 3), // CREW_JOB_PARTITIONS 3
		"deploy/kustomize/base/nats.yaml": jsjobs.PartitionedPermissionsFor("jobs", "jobs", 3), // CREW_JOB_PARTITIONS 3
	} {
		data, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		conf := string(data)
		if !strings.Contains(conf, "password: $CREWD_NATS_PASSWORD") {
			t.Errorf("%s: crewd's password is not the environment's", file)
		}
		for key, subjects := range map[string][]string{"publish": want.Publish, "subscribe": want.Subscribe} {
			got := granted(conf, key)
			if !slices.Equal(got, subjects) {
				t.Errorf("%s grants crewd %s\n%q\nwant\n%q", file, key, got, subjects)
			}
		}
	}
}

// granted is the subjects of a NATS config's first list under key
// (publish or subscribe), in order.
func granted(conf, key string) []string {
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

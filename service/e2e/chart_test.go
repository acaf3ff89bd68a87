package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crew-go/crew/jobs/jsjobs"
)

// TestChartGrantsPartitionedPermissionsFor: the Helm chart run with
// crewd.nats.partitions n (1, 3, 5, and the default, 3) passes n to crewd,
// its bundled NATS config grants crewd's user exactly
// jsjobs.PartitionedPermissionsFor("jobs", "jobs", n), in order, and its
// KEDA ScaledObject has one nats-jetstream trigger for each partition's
// stream and each lane's consumer (n x 4), each with the lag threshold a
// pod over the whole store divided by n, rounded up. It renders the chart with helm:
// deploy/check.sh runs it with its pinned helm; without helm on PATH or in
// check.sh's tool cache it is skipped.
func TestChartGrantsPartitionedPermissionsFor(t *testing.T) {
	helm := helmBinary(t)
	chart := filepath.Join("..", "..", "deploy", "helm", "crewd")
	for _, n := range []int{0, 1, 3, 5} { // 0: the default
		args := []string{"template", "crewd", chart, "--namespace", "crewd-check",
			"--set", "autoscaling.hpa.enabled=false", "--set", "autoscaling.keda.enabled=true",
			"--show-only", "templates/nats.yaml", "--show-only", "templates/scaledobject.yaml",
			"--show-only", "templates/deployment.yaml"}
		want := n
		if n == 0 {
			want = 3
		} else {
			args = append(args, "--set", "crewd.nats.partitions="+strconv.Itoa(n))
		}
		out, err := exec.Command(helm, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		render := string(out)
		name := "partitions " + strconv.Itoa(want)
		if n == 0 {
			name += " (the default)"
		}

		if !regexp.MustCompile(`- name: CREW_JOB_PARTITIONS\s+value: "` + strconv.Itoa(want) + `"`).MatchString(render) {
			t.Errorf("%s: the Deployment does not set CREW_JOB_PARTITIONS %d", name, want)
		}

		perms := jsjobs.PartitionedPermissionsFor("jobs", "jobs", want)
		for key, subjects := range map[string][]string{"publish": perms.Publish, "subscribe": perms.Subscribe} {
			if got := granted(render, key); !slices.Equal(got, subjects) {
				i := 0
				for i < min(len(got), len(subjects)) && got[i] == subjects[i] {
					i++
				}
				at := func(l []string) string {
					if i < len(l) {
						return strconv.Quote(l[i])
					}
					return "the end"
				}
				t.Errorf("%s: the chart's nats.conf grants crewd %d subjects to %s, want %d (jsjobs.PartitionedPermissionsFor): the first difference is subject %d, %s, want %s",
					name, len(got), key, len(subjects), i+1, at(got), at(subjects))
			}
		}

		var wantTriggers, gotTriggers []string
		for k := range want {
			stream := "jobs"
			if k > 0 {
				stream += "-" + strconv.Itoa(k)
			}
			for _, lane := range []string{"", "-p1", "-p3", "-p4"} {
				wantTriggers = append(wantTriggers, stream+"/crewd"+lane)
			}
		}
		for _, trigger := range strings.Split(render, "- type: ")[1:] {
			if !strings.HasPrefix(trigger, "nats-jetstream") {
				continue
			}
			stream := regexp.MustCompile(`stream: "([^"]*)"`).FindStringSubmatch(trigger)
			consumer := regexp.MustCompile(`consumer: "([^"]*)"`).FindStringSubmatch(trigger)
			if stream == nil || consumer == nil {
				t.Fatalf("%s: a nats-jetstream trigger without its stream or consumer:\n%s", name, trigger)
			}
			gotTriggers = append(gotTriggers, stream[1]+"/"+consumer[1])
			threshold := regexp.MustCompile(`lagThreshold: "([^"]*)"`).FindStringSubmatch(trigger)
			if wantThreshold := strconv.Itoa((100 + want - 1) / want); threshold == nil || threshold[1] != wantThreshold {
				t.Errorf("%s: trigger %s/%s's lagThreshold %v, want %s (100 a pod over %d partitions)", name, stream[1], consumer[1], threshold, wantThreshold, want)
			}
		}
		if !slices.Equal(gotTriggers, wantTriggers) {
			t.Errorf("%s: the ScaledObject's nats-jetstream triggers (stream/consumer), %d:\n%q\nwant %d:\n%q",
				name, len(gotTriggers), gotTriggers, len(wantTriggers), wantTriggers)
		}
	}
}

// helmBinary is helm on PATH, else the one deploy/install-tools.sh builds
// into its cache; the test is skipped without either.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	cache := os.Getenv("CREW_DEPLOY_CACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			t.Skip("no helm on PATH and no cache directory: deploy/install-tools.sh builds helm")
		}
		cache = filepath.Join(dir, "crew-deploy")
	}
	p := filepath.Join(cache, "bin", "helm")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no helm on PATH nor at %s: deploy/install-tools.sh builds it", p)
	}
	return p
}

package jsjobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/prometheus/client_golang/prometheus"
)

// TestNamespaceNamesTheMetrics: a Runner's metrics carry the program's
// name (Config.Namespace), "crew" when it gives none, and pass a pedantic
// registry; a namespace that cannot begin a metric name is refused.
func TestNamespaceNamesTheMetrics(t *testing.T) {
	c := newCluster(t)
	for _, tc := range []struct{ namespace, want string }{{"", "crew_job_store_up"}, {"billing", "billing_job_store_up"}} {
		cfg := jsConfig()
		cfg.Namespace = tc.namespace
		r := c.runner(t, cfg)
		closeRunner(t, r)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(r.Collector())
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, mf := range mfs {
			names = append(names, mf.GetName())
			if !strings.HasPrefix(mf.GetName(), strings.TrimSuffix(tc.want, "job_store_up")) {
				t.Errorf("namespace %q: metric %s", tc.namespace, mf.GetName())
			}
		}
		if !strings.Contains(strings.Join(names, " "), tc.want) {
			t.Errorf("namespace %q: metrics %v, want %s among them", tc.namespace, names, tc.want)
		}
	}
	for _, bad := range []string{"9lives", "crew-jobs", "crew.jobs", "ü"} {
		cfg := jsConfig()
		cfg.Namespace = bad
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := jsjobs.New(ctx, c.js, cfg)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "Namespace") {
			t.Errorf("namespace %q: %v, want refused naming Namespace", bad, err)
		}
	}
}

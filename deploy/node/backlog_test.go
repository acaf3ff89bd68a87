package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNodeBacklog is the chart's HPA on crewd's backlog, for real: the
// chart's defaults with autoscaling.hpa.backlog.enabled (CPU and the
// External metric crewd_backlog, 100 per pod), the metric served by
// node.sh's extmetrics from its Prometheus with prometheus-adapter's rule
// (deploy/prometheus-adapter/values.yaml). The test builds a backlog of
// sleep jobs, which cost no CPU, through the Service: the HPA must add
// pods on it, and once the backlog has drained remove them again, while a
// steady load of short jobs goes on; every job answered 202 must succeed.
// It samples the pods, the backlog (as the HPA reads it) and the jobs
// accepted over time, and logs them. It runs with NODE_BACKLOG=1 as well
// as CREW_NODE_TEST=1.
func TestNodeBacklog(t *testing.T) {
	set, ctx, client := begin(t, 15*time.Minute, "the backlog test runs with CREW_NODE_TEST=1 and NODE_BACKLOG=1 (NODE_BACKLOG=1 deploy/node/node-test.sh)", "NODE_BACKLOG")
	began := time.Now()

	const ns = "crewd-backlog"
	for _, n := range []string{"crewd", "crewd-prod", "crewd-hpa", ns} {
		if _, err := kube(ctx, "delete", "namespace", n, "--ignore-not-found", "--wait", "--timeout", "3m"); err != nil {
			t.Fatal(err)
		}
	}
	namespace = ns
	// The tests after this one (in file order it runs first) need the CPU
	// it requests back.
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer dcancel()
		if _, err := kube(dctx, "delete", "namespace", ns, "--ignore-not-found", "--wait", "--timeout", "3m"); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	t0 := time.Now()
	chart, err := absChart(set)
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(ctx, t)
	// The chart's HPA with the backlog (its defaults: CPU at 70% of
	// requests, crewd_backlog at 100 per pod, from 2 pods), room for 6 pods
	// on 2 cores, a scale-down after 30 s rather than 30 min.
	args := []string{"install", release, chart, "-n", namespace, "--wait", "--timeout", "6m",
		"--set", "image.tag=node", "--set", "nats.image.repository=crew-nats", "--set", "nats.image.tag=node",
		"--set", "resources.requests.cpu=100m", "--set", "nats.resources.requests.cpu=100m",
		"--set", "autoscaling.hpa.backlog.enabled=true",
		"--set", "autoscaling.maxReplicas=6",
		"--set", "autoscaling.behavior.scaleDown.stabilizationWindowSeconds=30",
		"--set", "autoscaling.behavior.scaleDown.policies[0].type=Pods",
		"--set", "autoscaling.behavior.scaleDown.policies[0].value=4",
		"--set", "autoscaling.behavior.scaleDown.policies[0].periodSeconds=15"}
	if len(set.helmArgs) > 0 {
		t.Logf("more helm arguments (NODE_HELM_ARGS): %v", set.helmArgs)
		args = append(args, set.helmArgs...)
	}
	if out, err := run(ctx, "helm", args...); err != nil {
		diagnose(ctx, t)
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	waitPods(ctx, t, namespace, crewdSelector, 2, 2*time.Minute)
	n := readyN(ctx, t, client, t0, 2)
	n.firstJob(ctx, t)
	phase(t, "helm install with the HPA on CPU and the backlog, 2 pods, a job through the Service", t0)

	// The metric as the HPA reads it, through the aggregation layer: it
	// must exist (0) before the backlog is built.
	t1 := time.Now()
	waitFor(ctx, t, 2*time.Minute, "crewd_backlog through external.metrics.k8s.io", func() (bool, string) {
		v, err := externalBacklog(ctx)
		return err == nil, fmt.Sprintf("value %v: %v", v, err)
	})
	phase(t, "crewd_backlog served (Prometheus scraping the pods, extmetrics)", t1)

	rec := &recorder{}
	recCtx, stopRec := context.WithCancel(ctx)
	var rwg sync.WaitGroup
	defer func() { stopRec(); rwg.Wait() }()
	l := &load{client: n.client, url: n.svc, refused: map[string]int{}}
	rwg.Go(func() { rec.run(recCtx, 3*time.Second, l) })

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopLoad(); wg.Wait() }()
	wg.Go(func() { l.run(loadCtx, 5, 4) })

	// The backlog: sleep jobs of 1 s, which cost no CPU; 2 workers a pod
	// (GOMAXPROCS of a 2-CPU limit) run 4 a second on 2 pods.
	t2 := time.Now()
	const backlogJobs = 600
	var bwg sync.WaitGroup
	next := make(chan int)
	var bmu sync.Mutex
	var refused int
	for range 16 {
		bwg.Go(func() {
			for range next {
				id, why := l.post(ctx, []byte(`{"kind":"sleep","duration":"1s"}`))
				if id == "" {
					bmu.Lock()
					refused++
					if refused <= 3 {
						t.Logf("a backlog job refused: %s", why)
					}
					bmu.Unlock()
					continue
				}
				l.mu.Lock()
				l.accepted = append(l.accepted, accepted{ID: id, At: time.Now()})
				l.mu.Unlock()
			}
		})
	}
	for i := range backlogJobs {
		next <- i
	}
	close(next)
	bwg.Wait()
	if refused > 0 {
		t.Errorf("%d of %d backlog jobs refused", refused, backlogJobs)
	}
	phase(t, fmt.Sprintf("a backlog of %d sleep jobs of 1 s posted through the Service", backlogJobs-refused), t2)

	// Up: the HPA adds pods on the backlog.
	t3 := time.Now()
	most := 0
	waitFor(ctx, t, 2*time.Minute, "the HPA adding pods on the backlog (4 Ready)", func() (bool, string) {
		h := hpaStatus(ctx)
		most = max(most, h.current)
		ready, _ := readyPods(ctx, namespace, crewdSelector)
		return len(ready) >= 4, fmt.Sprintf("%s; %d pods Ready", h, len(ready))
	})
	up := time.Since(t3)
	phase(t, "scaled up on the backlog: "+hpaStatus(ctx).String(), t3)

	// Drained: the backlog back near nothing (the steady load's jobs).
	t4 := time.Now()
	waitFor(ctx, t, 4*time.Minute, "the backlog drained (below 10)", func() (bool, string) {
		v, err := externalBacklog(ctx)
		h := hpaStatus(ctx)
		most = max(most, h.current)
		return err == nil && v < 10, fmt.Sprintf("backlog %v (%v); %s", v, err, h)
	})
	drained := time.Since(t2)
	phase(t, "the backlog drained", t4)

	// Down: back to 2, jobs still coming.
	t5 := time.Now()
	waitFor(ctx, t, 3*time.Minute, "the HPA removing pods (back to 2)", func() (bool, string) {
		h := hpaStatus(ctx)
		most = max(most, h.current)
		ps, _ := pods(ctx, namespace, crewdSelector)
		return h.current == 2 && len(ps) == 2, fmt.Sprintf("%s; %d pods", h, len(ps))
	})
	down := time.Since(t5)
	phase(t, "scaled down after the backlog drained: "+hpaStatus(ctx).String(), t5)
	sleep(ctx, 5*time.Second)
	stopLoad()
	wg.Wait()
	stopRec()
	rwg.Wait()
	rec.log(t, t2)

	t.Logf("jobs: %d submitted by the steady load and %d backlog jobs posted, %d accepted (202); refused: %s",
		l.submitted.Load(), backlogJobs, len(l.accepted), summary(l.refused))
	actx, acancel := context.WithTimeout(ctx, set.settle)
	defer acancel()
	t6 := time.Now()
	if pending := l.await(actx, 16); len(pending) > 0 {
		t.Errorf("%d of %d accepted jobs not succeeded %v after the load", len(pending), len(l.accepted), set.settle)
	} else {
		phase(t, fmt.Sprintf("every one of the %d accepted jobs succeeded", len(l.accepted)), t6)
	}
	t.Logf("SUMMARY most replicas %d, highest backlog %.0f; up to 4 Ready %.0fs after the backlog was posted, drained %.0fs after, back to 2 pods %.0fs after that; %d jobs accepted; whole test %.0fs",
		most, rec.highest(), up.Seconds()+t3.Sub(t2).Seconds(), drained.Seconds(), down.Seconds(), len(l.accepted), time.Since(began).Seconds())
}

// externalBacklog reads crewd_backlog in the test's namespace through the
// external metrics API, as the HPA does.
func externalBacklog(ctx context.Context) (float64, error) {
	out, err := kube(ctx, "get", "--raw", "/apis/external.metrics.k8s.io/v1beta1/namespaces/"+namespace+"/crewd_backlog")
	if err != nil {
		return 0, err
	}
	var list struct {
		Items []struct {
			Value string `json:"value"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return 0, err
	}
	var sum float64
	for _, it := range list.Items {
		v, err := parseQuantity(it.Value)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// parseQuantity reads the quantities the metrics APIs write: "520",
// "1500m", "2k".
func parseQuantity(s string) (float64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "m"):
		mult, s = 0.001, strings.TrimSuffix(s, "m")
	case strings.HasSuffix(s, "k"):
		mult, s = 1000, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	}
	f, err := strconv.ParseFloat(s, 64)
	return f * mult, err
}

// hpa is what the HPA says of itself.
type hpa struct {
	current, desired int
	cpu              string // % of requests
	backlog          string // the External metric's average per pod
	err              error
}

func (h hpa) String() string {
	if h.err != nil {
		return "HPA: " + h.err.Error()
	}
	return fmt.Sprintf("HPA: %d replicas, %d desired; CPU %s%% of requests (target 70%%), backlog %s per pod (target 100)", h.current, h.desired, h.cpu, h.backlog)
}

func hpaStatus(ctx context.Context) hpa {
	out, err := kube(ctx, "-n", namespace, "get", "hpa", release, "-o", "json")
	if err != nil {
		return hpa{err: err}
	}
	var v struct {
		Status struct {
			Current        int `json:"currentReplicas"`
			Desired        int `json:"desiredReplicas"`
			CurrentMetrics []struct {
				Type     string `json:"type"`
				Resource *struct {
					Current struct {
						AverageUtilization *int `json:"averageUtilization"`
					} `json:"current"`
				} `json:"resource"`
				External *struct {
					Current struct {
						AverageValue string `json:"averageValue"`
					} `json:"current"`
				} `json:"external"`
			} `json:"currentMetrics"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return hpa{err: err}
	}
	h := hpa{current: v.Status.Current, desired: v.Status.Desired, cpu: "?", backlog: "?"}
	for _, m := range v.Status.CurrentMetrics {
		if m.Resource != nil && m.Resource.Current.AverageUtilization != nil {
			h.cpu = strconv.Itoa(*m.Resource.Current.AverageUtilization)
		}
		if m.External != nil {
			h.backlog = m.External.Current.AverageValue
		}
	}
	return h
}

// recorder samples the pods, the backlog and the jobs accepted.
type recorder struct {
	mu      sync.Mutex
	samples []sampleAt
}

type sampleAt struct {
	at       time.Time
	ready    int
	hpa      hpa
	backlog  float64
	accepted int
}

func (r *recorder) run(ctx context.Context, every time.Duration, l *load) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		ready, _ := readyPods(ctx, namespace, crewdSelector)
		b, _ := externalBacklog(ctx)
		h := hpaStatus(ctx)
		l.mu.Lock()
		acc := len(l.accepted)
		l.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.samples = append(r.samples, sampleAt{at: time.Now(), ready: len(ready), hpa: h, backlog: b, accepted: acc})
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (r *recorder) highest() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var m float64
	for _, s := range r.samples {
		m = max(m, s.backlog)
	}
	return m
}

// log writes the samples as a table, times from t0.
func (r *recorder) log(t *testing.T, t0 time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%7s %6s %8s %8s %8s %9s %9s\n", "t (s)", "ready", "replicas", "desired", "backlog", "CPU %req", "accepted")
	for _, s := range r.samples {
		fmt.Fprintf(&b, "%7.0f %6d %8d %8d %8.0f %9s %9d\n", s.at.Sub(t0).Seconds(), s.ready, s.hpa.current, s.hpa.desired, s.backlog, s.hpa.cpu, s.accepted)
	}
	t.Logf("over time (from the backlog's first post; backlog as the HPA reads it, the whole namespace's):\n%s", b.String())
}

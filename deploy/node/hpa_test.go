package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNodeHPA is the chart's HPA on CPU, through metrics-server: under
// factorial batches through the Service it must add pods, and once the
// batches stop remove them again, while a steady load of jobs goes on;
// every job answered 202 must succeed. It runs with NODE_HPA=1 as well as
// CREW_NODE_TEST=1 (node-test.sh passes it on): it adds about 4 minutes.
func TestNodeHPA(t *testing.T) {
	set, ctx, client := begin(t, 15*time.Minute, "the HPA test runs with CREW_NODE_TEST=1 and NODE_HPA=1 (NODE_HPA=1 deploy/node/node-test.sh)", "NODE_HPA")
	began := time.Now()

	// The other tests' releases (and an earlier run's) leave too little CPU
	// to request.
	for _, ns := range []string{"crewd", "crewd-prod", "crewd-hpa"} {
		if _, err := kube(ctx, "delete", "namespace", ns, "--ignore-not-found", "--wait", "--timeout", "3m"); err != nil {
			t.Fatal(err)
		}
	}
	namespace = "crewd-hpa"
	// The tests after this one (in file order it runs first) need the CPU
	// it requests back.
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer dcancel()
		if _, err := kube(dctx, "delete", "namespace", "crewd-hpa", "--ignore-not-found", "--wait", "--timeout", "3m"); err != nil {
			t.Errorf("deleting namespace crewd-hpa: %v", err)
		}
	})
	t0 := time.Now()
	chart, err := absChart(set)
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(ctx, t)
	// The chart's HPA (CPU, 70% of requests, from 2), with room for 6
	// pods on 2 cores, and a scale-down after 30 s rather than 30 min.
	args := []string{"install", release, chart, "-n", namespace, "--wait", "--timeout", "6m",
		"--set", "image.tag=node", "--set", "nats.image.repository=crew-nats", "--set", "nats.image.tag=node",
		"--set", "resources.requests.cpu=100m", "--set", "nats.resources.requests.cpu=100m",
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
	known := n.firstJob(ctx, t)
	_ = known
	phase(t, "helm install with the HPA, 2 pods, a job through the Service", t0)

	l := &load{client: n.client, url: n.svc, refused: map[string]int{}}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopLoad(); wg.Wait() }()
	wg.Go(func() { l.run(loadCtx, 10, 8) })

	// Up: factorial batches until the HPA has added pods and they are Ready.
	t1 := time.Now()
	cpuCtx, stopCPU := context.WithCancel(ctx)
	var cpu sync.WaitGroup
	var batches, failed int64
	var mu sync.Mutex
	body := []byte(`{"numbers":[` + strings.TrimSuffix(strings.Repeat("20,", 256), ",") + `]}`)
	for range 8 {
		cpu.Go(func() {
			for cpuCtx.Err() == nil {
				ok := postBatch(cpuCtx, n.client, n.svc, body)
				mu.Lock()
				if ok {
					batches++
				} else if cpuCtx.Err() == nil {
					failed++
				}
				mu.Unlock()
			}
		})
	}
	most := 0
	waitFor(ctx, t, 2*time.Minute, "the HPA adding pods (4 Ready)", func() (bool, string) {
		r, status := hpaState(ctx)
		most = max(most, r)
		ready, _ := readyPods(ctx, namespace, crewdSelector)
		return len(ready) >= 4, fmt.Sprintf("%s; %d pods Ready", status, len(ready))
	})
	_, status := hpaState(ctx)
	stopCPU()
	cpu.Wait()
	phase(t, fmt.Sprintf("scaled up under factorial batches (%d answered 200, %d not): %s", batches, failed, status), t1)

	// Down: once the batches stop, back to 2, jobs still coming.
	t2 := time.Now()
	waitFor(ctx, t, 4*time.Minute, "the HPA removing pods (back to 2)", func() (bool, string) {
		r, status := hpaState(ctx)
		most = max(most, r)
		ready, _ := pods(ctx, namespace, crewdSelector)
		return r == 2 && len(ready) == 2, fmt.Sprintf("%s; %d pods", status, len(ready))
	})
	_, status = hpaState(ctx)
	phase(t, "scaled down after the batches: "+status, t2)
	sleep(ctx, 5*time.Second)
	stopLoad()
	wg.Wait()
	t.Logf("jobs through the scale-up and down: %d submitted, %d accepted (202); refused: %s", l.submitted.Load(), len(l.accepted), summary(l.refused))
	actx, acancel := context.WithTimeout(ctx, set.settle)
	defer acancel()
	if pending := l.await(actx, 16); len(pending) > 0 {
		t.Errorf("%d of %d accepted jobs not succeeded %v after the load", len(pending), len(l.accepted), set.settle)
	} else {
		t.Logf("every one of the %d accepted jobs succeeded", len(l.accepted))
	}
	t.Logf("SUMMARY most replicas %d; whole test %.0fs", most, time.Since(began).Seconds())
}

// hpaState is the HPA's current replicas and a line about it.
func hpaState(ctx context.Context) (int, string) {
	out, err := kube(ctx, "-n", namespace, "get", "hpa", release, "-o", "jsonpath={.status.currentReplicas} {.status.desiredReplicas} {.status.currentMetrics[0].resource.current.averageUtilization}")
	if err != nil {
		return 0, err.Error()
	}
	f := strings.Fields(out)
	if len(f) < 2 {
		return 0, "HPA status: " + out
	}
	r, _ := strconv.Atoi(f[0])
	u := "?"
	if len(f) > 2 {
		u = f[2]
	}
	return r, fmt.Sprintf("HPA: %s replicas, %s desired, CPU %s%% of requests (target 70%%)", f[0], f[1], u)
}

func postBatch(ctx context.Context, client *http.Client, svc string, body []byte) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, svc+"/v1/factorial", bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

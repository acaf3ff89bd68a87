package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// namespace is where the test under way installs (each test sets it;
// they do not run in parallel).
var namespace = "crewd"

const (
	release = "crewd"
	// The chart's labels: crewd's pods, the NATS servers'.
	crewdSelector = "app.kubernetes.io/name=crewd,app.kubernetes.io/instance=" + release
	natsSelector  = "app.kubernetes.io/name=nats,app.kubernetes.io/instance=" + release
	nodeName      = "crew-node"
)

// installArgs are the values the test installs the chart with, and why:
// the images node.sh imported; no HPA (the node has no metrics-server, and
// the test scales by hand); three replicas; CPU requests that fit 2 cores
// (3 crewd + 3 NATS + CoreDNS, and a surge pod during a rollout).
var installArgs = []string{
	"--set", "image.tag=node",
	"--set", "nats.image.repository=crew-nats", "--set", "nats.image.tag=node",
	"--set", "autoscaling.hpa.enabled=false", "--set", "replicaCount=3",
	"--set", "resources.requests.cpu=100m", "--set", "nats.resources.requests.cpu=100m",
}

// settings: NODE_RATE (jobs/s through the Service, 20), NODE_SETTLE (how
// long after the load every job must have succeeded, 2m), NODE_HELM_ARGS
// (more helm arguments, split at spaces, after the test's own) and
// NODE_CHART (another chart directory than deploy/helm/crewd): how the test
// is shown to fail on a broken install.
type settings struct {
	rate     int
	settle   time.Duration
	helmArgs []string
	chart    string
}

func readSettings(t *testing.T) settings {
	s := settings{rate: 20, settle: 2 * time.Minute}
	if v := os.Getenv("NODE_RATE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("NODE_RATE=%q: want a positive number", v)
		}
		s.rate = n
	}
	if v := os.Getenv("NODE_SETTLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("NODE_SETTLE=%q: want a positive duration", v)
		}
		s.settle = d
	}
	s.helmArgs = strings.Fields(os.Getenv("NODE_HELM_ARGS"))
	s.chart = os.Getenv("NODE_CHART")
	if s.chart == "" {
		s.chart = filepath.Join("..", "helm", "crewd")
	}
	return s
}

func phase(t *testing.T, what string, since time.Time) {
	t.Helper()
	t.Logf("%-60s %6.1fs", what, time.Since(since).Seconds())
}

// begin skips t, saying why, unless CREW_NODE_TEST and every variable of
// also are set; else it returns the settings, a context that ends after d
// and a client for the Services, both ended with the test.
func begin(t *testing.T, d time.Duration, why string, also ...string) (settings, context.Context, *http.Client) {
	t.Helper()
	for _, v := range append([]string{"CREW_NODE_TEST"}, also...) {
		if os.Getenv(v) == "" {
			t.Skip(why)
		}
	}
	set := readSettings(t)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	transport := &http.Transport{MaxIdleConnsPerHost: 32}
	t.Cleanup(transport.CloseIdleConnections)
	return set, ctx, &http.Client{Transport: bearer{transport}}
}

const nodeTestSkip = "the node test runs with CREW_NODE_TEST=1 (deploy/node/node-test.sh): it needs node.sh's cluster and a few minutes"

// TestNode: see the package documentation.
func TestNode(t *testing.T) {
	set, ctx, client := begin(t, 25*time.Minute, nodeTestSkip)
	began := time.Now()

	nodeIP, err := kube(ctx, "get", "node", nodeName, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)
	if err != nil {
		t.Fatal(err)
	}
	collector := startCollector(t, nodeIP)
	defer collector.close()
	namespace = "crewd"
	n := install(ctx, t, client, collector.url, set)
	known := n.firstJob(ctx, t)
	helmTest(ctx, t)
	checkPolicies(ctx, t)
	checkNATSAuth(ctx, t)
	n.faults(ctx, t, set, known, true)
	t.Logf("the stalled trace collector at %s took %d connections and answered none", collector.url, collector.count())
	t.Logf("SUMMARY whole test %.0fs", time.Since(began).Seconds())
}

// nodeTest is the installed release and where to reach it.
type nodeTest struct {
	client *http.Client
	svc    string // the crewd Service: http://<cluster IP>:<port>
	worst  time.Duration
}

// TestNodeKustomize applies the kustomize prod overlay (kubectl apply -k)
// in a namespace of its own and runs TestNode's proof with the faults the
// overlay's objects could differ in from the chart's: a crewd pod deleted,
// the stream leader's pod deleted, the longest stop. (Rollout, scale and
// drain move the same Deployment and PodDisruptionBudget; TestNode has
// them.) The overlay as it is, but for what the node lacks: prodOnTheNode.
func TestNodeKustomize(t *testing.T) {
	set, ctx, client := begin(t, 15*time.Minute, nodeTestSkip)
	began := time.Now()
	nodeIP, err := kube(ctx, "get", "node", nodeName, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)
	if err != nil {
		t.Fatal(err)
	}
	collector := startCollector(t, nodeIP)
	defer collector.close()

	namespace = "crewd-prod"
	t0 := time.Now()
	dir := t.TempDir()
	base, err := filepath.Abs(filepath.Join("..", "kustomize"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, base) // kustomize refuses absolute paths
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(prodOnTheNode(rel, collector.url)), 0o644); err != nil {
		t.Fatal(err)
	}
	createNamespace(ctx, t)
	makeTokenSecret(ctx, t)
	// The NATS cluster's TLS and crewd's NATS password, as the base's
	// operator makes them.
	if out, err := run(ctx, filepath.Join("..", "kustomize", "nats-secrets.sh"), namespace); err != nil {
		t.Fatalf("nats-secrets.sh: %v\n%s", err, out)
	}
	if out, err := kube(ctx, "apply", "-k", dir); err != nil {
		t.Fatalf("kubectl apply -k (overlays/prod): %v\n%s", err, out)
	}
	for _, w := range []string{"deployment/" + release, "statefulset/" + release + "-nats"} {
		if _, err := kube(ctx, "-n", namespace, "rollout", "status", w, "--timeout", "6m"); err != nil {
			diagnose(ctx, t)
			t.Fatal(err)
		}
	}
	phase(t, "kubectl apply -k of overlays/prod, rolled out", t0)
	n := ready(ctx, t, client, t0)
	known := n.firstJob(ctx, t)
	checkPolicies(ctx, t)
	checkNATSAuth(ctx, t)
	n.faults(ctx, t, set, known, false)
	t.Logf("the stalled trace collector at %s took %d connections and answered none", collector.url, collector.count())
	t.Logf("SUMMARY whole test %.0fs", time.Since(began).Seconds())
}

// prodOnTheNode is a kustomization of overlays/prod (at rel) for the node,
// in namespace crewd-prod: the node's images; no HPA, so that the faults
// meet 3 replicas whatever the load (the chart's HPA is seen moving the
// Deployment by TestNodeHPA and TestNodeBacklog); CPU requests of 100m,
// not 2 CPUs (2 cores in all); every request and job traced to the test's
// stalled collector, which crewd's NetworkPolicy lets it reach (as
// components/tracing does for a collector in the cluster; this one is on
// the node's address, in no namespace: an ipBlock).
func prodOnTheNode(rel, collector string) string {
	host, port := collectorHostPort(collector)
	return `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: crewd-prod
resources:
  - ` + rel + `/overlays/prod
images:
  - {name: crewd, newTag: node}
  - {name: nats, newName: crew-nats, newTag: node}
patches:
  - patch: |-
      $patch: delete
      apiVersion: autoscaling/v2
      kind: HorizontalPodAutoscaler
      metadata:
        name: crewd
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: crewd
      spec:
        replicas: 3
        template:
          spec:
            containers:
              - name: crewd
                resources:
                  requests: {cpu: 100m}
                env:
                  - {name: OTEL_EXPORTER_OTLP_ENDPOINT, value: "` + collector + `"}
                  - {name: OTEL_TRACES_SAMPLER, value: parentbased_traceidratio}
                  - {name: OTEL_TRACES_SAMPLER_ARG, value: "1"}
  - patch: |-
      apiVersion: apps/v1
      kind: StatefulSet
      metadata:
        name: crewd-nats
      spec:
        template:
          spec:
            containers:
              - name: nats
                resources:
                  requests: {cpu: 100m}
  - target: {kind: NetworkPolicy, name: crewd}
    patch: |-
      - op: add
        path: /spec/egress/-
        value:
          to: [{ipBlock: {cidr: ` + host + `/32}}]
          ports: [{port: ` + port + `, protocol: TCP}]
`
}

// collectorHostPort is the stalled collector's address (http://IP:PORT)
// as the IP and the port.
func collectorHostPort(collector string) (string, string) {
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(collector, "http://"))
	return host, port
}

// absChart is the chart's directory, absolute.
func absChart(set settings) (string, error) { return filepath.Abs(set.chart) }

// createNamespace creates the test's namespace, enforcing the restricted
// Pod Security Standard; it must not exist yet.
func createNamespace(ctx context.Context, t *testing.T) {
	t.Helper()
	if _, err := kube(ctx, "get", "namespace", namespace); err == nil {
		t.Fatalf("namespace %s exists: left by an earlier run? (kubectl delete namespace %s)", namespace, namespace)
	}
	if _, err := kube(ctx, "create", "namespace", namespace); err != nil {
		t.Fatal(err)
	}
	if _, err := kube(ctx, "label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted"); err != nil {
		t.Fatal(err)
	}
}

// install installs the chart (helm --wait) into a namespace that enforces
// the restricted Pod Security Standard, then waits for every pod Ready and
// the jobs stream and the records' bucket at R3, their followers current.
func install(ctx context.Context, t *testing.T, client *http.Client, collector string, set settings) *nodeTest {
	t0 := time.Now()
	chart, err := absChart(set)
	if err != nil {
		t.Fatal(err)
	}
	extra := set.helmArgs
	createNamespace(ctx, t)
	args := append([]string{"install", release, chart, "-n", namespace, "--wait", "--timeout", "6m"}, installArgs...)
	// Every request and job traced, to a collector that never answers; it
	// runs on the node's address, outside every namespace, so crewd's
	// NetworkPolicy reaches it by an ipBlock (as the values say of a
	// collector outside the cluster).
	host, _ := collectorHostPort(collector)
	args = append(args, "--set", "crewd.tracing.endpoint="+collector, "--set-string", "crewd.tracing.sampleRatio=1",
		"--set", "networkPolicy.tracingTo[0].ipBlock.cidr="+host+"/32")
	if set.chart != filepath.Join("..", "helm", "crewd") {
		t.Logf("the chart in %s (NODE_CHART)", chart)
	}
	if len(extra) > 0 {
		t.Logf("more helm arguments (NODE_HELM_ARGS): %v", extra)
		args = append(args, extra...)
	}
	if out, err := run(ctx, "helm", args...); err != nil {
		diagnose(ctx, t)
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	phase(t, "helm install --wait (every Deployment and StatefulSet ready)", t0)
	return ready(ctx, t, client, t0)
}

// ready waits for 3 crewd and 3 NATS pods Ready and the streams at R3, and
// finds the crewd Service.
func ready(ctx context.Context, t *testing.T, client *http.Client, t0 time.Time) *nodeTest {
	return readyN(ctx, t, client, t0, 3)
}

// readyN is ready with n crewd pods.
func readyN(ctx context.Context, t *testing.T, client *http.Client, t0 time.Time, n int) *nodeTest {
	crewds := waitPods(ctx, t, namespace, crewdSelector, n, 2*time.Minute)
	natses := waitPods(ctx, t, namespace, natsSelector, 3, 2*time.Minute)
	t.Logf("crewd pods %v, NATS pods %v", names(crewds), names(natses))
	leaders := waitStreams(ctx, t, client, natsServers(ctx), 2*time.Minute)
	phase(t, fmt.Sprintf("the job store's %d streams at R3, followers current, led by %v", len(leaders), leaders), t0)
	ip, err := kube(ctx, "-n", namespace, "get", "service", release, "-o", "jsonpath={.spec.clusterIP}:{.spec.ports[?(@.name==\"http\")].port}")
	if err != nil {
		t.Fatal(err)
	}
	useTokenSecret(ctx, t, "http://"+ip)
	return &nodeTest{client: client, svc: "http://" + ip}
}

// natsServers returns a function that lists the Ready NATS pods, name ->
// IP (a deleted server's pod comes back with another IP).
func natsServers(ctx context.Context) func() map[string]string {
	return func() map[string]string {
		m, _ := readyPods(ctx, namespace, natsSelector)
		return m
	}
}

// firstJob posts one job through the Service and waits until it has
// succeeded; its id is the job the replicas are read for during faults.
func (n *nodeTest) firstJob(ctx context.Context, t *testing.T) string {
	t0 := time.Now()
	l := &load{client: n.client, url: n.svc, refused: map[string]int{}}
	var id, why string
	waitFor(ctx, t, 30*time.Second, "a job accepted (202) through the Service "+n.svc, func() (bool, string) {
		id, why = l.post(ctx, []byte(`{"kind":"sleep","duration":"100ms"}`))
		return id != "", why
	})
	var s string
	waitFor(ctx, t, 30*time.Second, "job "+id+" succeeded", func() (bool, string) {
		var err error
		s, err = state(ctx, n.client, n.svc, id)
		if err != nil {
			return false, err.Error()
		}
		return s == "succeeded", "state " + s
	})
	phase(t, "a job through the Service "+n.svc+": 202, then succeeded", t0)
	return id
}

// helmTest runs the chart's test hook (helm test: crewd probe in crewd's
// image posts a job through the Service and waits for it to succeed) and
// logs what the probe printed.
func helmTest(ctx context.Context, t *testing.T) {
	t.Helper()
	t0 := time.Now()
	out, err := run(ctx, "helm", "test", release, "-n", namespace, "--timeout", "2m", "--logs")
	if err != nil {
		diagnose(ctx, t)
		t.Fatalf("helm test: %v\n%s", err, out)
	}
	var lines []string
	for line := range strings.Lines(out) {
		l := strings.Join(strings.Fields(line), " ")
		if (strings.HasPrefix(l, "job ") || strings.HasPrefix(l, "TEST SUITE") || strings.HasPrefix(l, "Phase")) && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	phase(t, "helm test: "+strings.Join(lines, "; "), t0)
}

// faultFor is how long the test lets a fault's effects run before it
// measures the next.
const faultFor = 10 * time.Second

// faults runs a steady load of jobs through the Service and, one after
// the other, the faults a Kubernetes cluster brings to a Deployment and a
// StatefulSet (with full, the Deployment's rollout, scale and drain too);
// see the package documentation.
func (n *nodeTest) faults(ctx context.Context, t *testing.T, set settings, known string, full bool) {
	l := &load{client: n.client, url: n.svc, refused: map[string]int{}}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopLoad(); wg.Wait() }()
	start := time.Now()
	wg.Go(func() { l.run(loadCtx, set.rate, 16) })
	sleep(ctx, 5*time.Second)
	at := func() string {
		return fmt.Sprintf("at %5.1fs (%5d submitted):", time.Since(start).Seconds(), l.submitted.Load())
	}

	// 1. A crewd pod deleted: SIGTERM, its grace period, a new pod.
	n.fault(ctx, t, l, known, "delete of a crewd pod", maxStall, func(before map[string]string) []string {
		victim := names(before)[0]
		w := watchPod(ctx, victim)
		stopLog := followStop(ctx, victim)
		deleted := time.Now()
		if _, err := kube(ctx, "-n", namespace, "delete", "pod", victim, "--wait=false"); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s deleted pod %s", at(), victim)
		n.stopped(ctx, t, w, deleted, stopLog)
		waitPods(ctx, t, namespace, crewdSelector, 3, 2*time.Minute)
		return []string{victim}
	})

	if full {
		n.deploymentFaults(ctx, t, l, known, at)
	}

	// 5. The pod of the NATS server leading the most of the store's groups
	// (partitions' streams and buckets) deleted: the replicas on the other
	// servers neither stall a read nor take to accept a job more than
	// natsDeleteStall (a submit whose partition has no leader goes to
	// another).
	n.fault(ctx, t, l, known, "delete of the pod of the NATS server leading the most partitions", natsDeleteStall, func(before map[string]string) []string {
		leader, leads := busiest(waitStreams(ctx, t, n.client, natsServers(ctx), 2*time.Minute))
		servers := natsServers(ctx)()
		ips, err := clientIPs(ctx, n.client, servers[leader], "crewd")
		var on []string
		for p, ip := range before {
			if err != nil || slices.Contains(ips, ip) {
				on = append(on, p)
			}
		}
		if _, err := kube(ctx, "-n", namespace, "delete", "pod", leader, "--wait=false"); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s deleted pod %s, the leader of %v (crewd pods connected to it: %v)", at(), leader, leads, on)
		sleep(ctx, faultFor)
		waitPods(ctx, t, namespace, natsSelector, 3, 3*time.Minute)
		now := waitStreams(ctx, t, n.client, natsServers(ctx), 3*time.Minute)
		t.Logf("%s %s back; the store's groups led by %v, followers current", at(), leader, now)
		return on
	})

	sleep(ctx, 5*time.Second)
	stopLoad()
	wg.Wait()

	// 6. The longest stop: a pod whose jobs outlast crewd's shutdown
	// timeout, its traces' final flush stalled.
	n.longStop(ctx, t, l)
	t.Logf("submitted %d jobs in %.0fs through the Service: %d accepted (202), %d of them on a second or third try; refused: %s",
		l.submitted.Load(), time.Since(start).Seconds(), len(l.accepted), l.retried, summary(l.refused))
	if len(l.accepted) < int(l.submitted.Load())*9/10 {
		t.Errorf("only %d of %d jobs accepted", len(l.accepted), l.submitted.Load())
	}
	t0 := time.Now()
	actx, acancel := context.WithTimeout(ctx, set.settle)
	defer acancel()
	pending := l.await(actx, 16)
	if len(pending) > 0 {
		var some []string
		for id, s := range pending {
			if len(some) < 10 {
				some = append(some, fmt.Sprintf("%s (%q)", id, s))
			}
		}
		t.Errorf("%d of %d accepted jobs not succeeded %v after the load: %s", len(pending), len(l.accepted), set.settle, strings.Join(some, ", "))
	} else {
		phase(t, fmt.Sprintf("every one of the %d accepted jobs succeeded", len(l.accepted)), t0)
	}
	t.Logf("longest stall of a replica no fault touched: %.1fs (at most %v)", n.worst.Seconds(), maxStall)
}

// deploymentFaults are the Deployment's faults: a rollout restart, a scale
// 3 -> 1 -> 3, a drain through the PodDisruptionBudget.
func (n *nodeTest) deploymentFaults(ctx context.Context, t *testing.T, l *load, known string, at func() string) {
	// 2. A rollout restart: every pod replaced, one by one.
	n.fault(ctx, t, l, known, "rollout restart", maxStall, func(before map[string]string) []string {
		if _, err := kube(ctx, "-n", namespace, "rollout", "restart", "deployment/"+release); err != nil {
			t.Fatal(err)
		}
		if _, err := kube(ctx, "-n", namespace, "rollout", "status", "deployment/"+release, "--timeout", "5m"); err != nil {
			t.Fatal(err)
		}
		waitPods(ctx, t, namespace, crewdSelector, 3, 2*time.Minute)
		t.Logf("%s rollout restart done", at())
		return names(before)
	})

	// 3. Scaled 3 -> 1 -> 3.
	n.fault(ctx, t, l, known, "scale 3 -> 1 -> 3", maxStall, func(before map[string]string) []string {
		if _, err := kube(ctx, "-n", namespace, "scale", "deployment/"+release, "--replicas", "1"); err != nil {
			t.Fatal(err)
		}
		one := waitPods(ctx, t, namespace, crewdSelector, 1, 2*time.Minute)
		t.Logf("%s scaled down to %v", at(), names(one))
		sleep(ctx, faultFor/2)
		if _, err := kube(ctx, "-n", namespace, "scale", "deployment/"+release, "--replicas", "3"); err != nil {
			t.Fatal(err)
		}
		waitPods(ctx, t, namespace, crewdSelector, 3, 2*time.Minute)
		t.Logf("%s scaled up to 3", at())
		var gone []string
		for p := range before {
			if _, ok := one[p]; !ok {
				gone = append(gone, p)
			}
		}
		return gone
	})

	// 4. A drain of the node's crewd pods, through the eviction API and
	// the PodDisruptionBudget (maxUnavailable 1). On one node the drain
	// cordons the only node, so an evicted pod's replacement cannot be
	// scheduled and the budget must refuse every further eviction until
	// the node is uncordoned.
	n.fault(ctx, t, l, known, "drain through the PodDisruptionBudget", maxStall, func(before map[string]string) []string {
		out, err := kube(ctx, "drain", nodeName, "--pod-selector", crewdSelector, "--delete-emptydir-data", "--ignore-daemonsets", "--timeout", "25s")
		if err == nil {
			t.Errorf("kubectl drain completed on a one-node cluster: the PodDisruptionBudget let every crewd pod go\n%s", out)
		} else if !strings.Contains(err.Error(), "disruption budget") {
			t.Errorf("kubectl drain failed, but not on the PodDisruptionBudget: %v", err)
		}
		left, _ := readyPods(ctx, namespace, crewdSelector)
		var evicted []string
		for p := range before {
			if _, ok := left[p]; !ok {
				evicted = append(evicted, p)
			}
		}
		t.Logf("%s drain (node cordoned): evicted %v; then %s", at(), evicted, drainEnd(err))
		if len(evicted) != 1 {
			t.Errorf("drain evicted %d crewd pods (%v), want exactly 1 (PodDisruptionBudget maxUnavailable 1)", len(evicted), evicted)
		}
		if _, err := kube(ctx, "uncordon", nodeName); err != nil {
			t.Fatal(err)
		}
		waitPods(ctx, t, namespace, crewdSelector, 3, 2*time.Minute)
		t.Logf("%s uncordoned: 3 crewd pods Ready", at())
		return evicted
	})
}

// fault measures one fault: the Ready crewd pods are read and written to
// by IP while do runs; do returns the pods it touched (deleted, evicted,
// attached to the server it deleted). Every pod it did not touch must
// have answered a read at least every limit, and accepted each job
// posted to it within limit. The Service's longest gap between accepted
// jobs is logged.
func (n *nodeTest) fault(ctx context.Context, t *testing.T, l *load, known, what string, limit time.Duration, do func(before map[string]string) []string) {
	t.Helper()
	before, err := readyPods(ctx, namespace, crewdSelector)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	s, wg := watch(wctx, n.client, before, known)
	from := time.Now()
	touched := do(before)
	sleep(ctx, 2*time.Second)
	to := time.Now()
	stop()
	wg.Wait()
	var line, writes string
	var worst, slowestWrite time.Duration
	refused := 0
	for _, p := range names(before) {
		d := s.longest(p, from, to)
		slowest, no := s.writes(p, from, to)
		tag := ""
		if slices.Contains(touched, p) {
			tag = " (touched)"
		} else {
			worst = max(worst, d)
			slowestWrite = max(slowestWrite, slowest)
			refused += no
		}
		line += fmt.Sprintf(" %s %.1fs%s", p, d.Seconds(), tag)
		writes += fmt.Sprintf(" %s slowest %.2fs, %d refused%s;", p, slowest.Seconds(), no, tag)
	}
	n.worst = max(n.worst, worst)
	t.Logf("%s, %.0fs: longest stall per replica:%s; writes:%s the Service's longest gap between accepted jobs %.1fs",
		what, to.Sub(from).Seconds(), line, writes, l.gap(from, to).Seconds())
	if worst > limit {
		t.Errorf("%s: a replica the fault did not touch stalled %.1fs, more than %v", what, worst.Seconds(), limit)
	}
	if slowestWrite > limit || refused > 0 {
		t.Errorf("%s: a replica the fault did not touch took %.2fs to accept a job (at most %v) and refused %d (none)", what, slowestWrite.Seconds(), limit, refused)
	}
}

// podWatch follows one pod (kubectl get --watch) until it is gone.
type podWatch struct {
	started chan struct{} // closed at the first event: the watch is on
	done    chan struct{}
	mu      sync.Mutex
	grace   int       // the delete's grace period, from the first state with a deletion timestamp
	exit    *int      // the crewd container's exit code, once terminated
	exitAt  time.Time // and when it exited, as the kubelet reports it (to the second)
	reason  string    // and the runtime's reason
	goneAt  time.Time // when the DELETED event came
	err     error
}

// watchedPod is the part of a Pod the watch reads.
type watchedPod struct {
	Metadata struct {
		DeletionGracePeriodSeconds *int `json:"deletionGracePeriodSeconds"`
	} `json:"metadata"`
	Status struct {
		ContainerStatuses []struct {
			Name  string `json:"name"`
			State struct {
				Terminated *struct {
					ExitCode   int       `json:"exitCode"`
					Reason     string    `json:"reason"`
					FinishedAt time.Time `json:"finishedAt"`
				} `json:"terminated"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func watchPod(ctx context.Context, name string) *podWatch {
	w := &podWatch{started: make(chan struct{}), done: make(chan struct{}), grace: -1}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	cmd := exec.CommandContext(wctx, "kubectl", "-n", namespace, "get", "pod", name, "--watch", "--output-watch-events", "-o", "json")
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		cancel()
		w.err = err
		close(w.started)
		close(w.done)
		return w
	}
	go func() {
		defer close(w.done)
		defer cancel()
		dec := json.NewDecoder(out)
		first := true
		for {
			var ev struct {
				Type   string     `json:"type"`
				Object watchedPod `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				break
			}
			w.mu.Lock()
			if g := ev.Object.Metadata.DeletionGracePeriodSeconds; g != nil && w.grace < 0 {
				w.grace = *g
			}
			for _, c := range ev.Object.Status.ContainerStatuses {
				if c.Name == "crewd" && c.State.Terminated != nil {
					code := c.State.Terminated.ExitCode
					w.exit, w.reason, w.exitAt = &code, c.State.Terminated.Reason, c.State.Terminated.FinishedAt
				}
			}
			if ev.Type == "DELETED" {
				w.goneAt = time.Now()
			}
			w.mu.Unlock()
			if first {
				first = false
				close(w.started)
			}
			if ev.Type == "DELETED" {
				break
			}
		}
		if first {
			close(w.started)
		}
		cancel()
		_ = cmd.Wait()
	}()
	select {
	case <-w.started:
	case <-time.After(10 * time.Second):
	}
	return w
}

// natsDeleteStall bounds the stall of a replica on another server while
// the pod of the NATS server leading the most partitions is deleted: the
// partitions' goal, a second (deploy/README.md, "Partitions", has what was
// measured).
const natsDeleteStall = time.Second

// stopMargin is how long before the kubelet's SIGKILL a deleted pod's
// crewd must have exited: a stop that ends a second before it is a race,
// lost on a busy node.
const stopMargin = 3 * time.Second

// longStop posts jobs that outlast crewd's shutdown timeout (40 s sleeps,
// 60 s timeouts), deletes a pod that runs one, and requires it to exit 0
// in time (stopped): its stop uses the whole timeout (the jobs cancelled
// at the deadline and handed back), then its traces' final flush waits on
// the stalled collector for its bound. The jobs are awaited with the load's.
func (n *nodeTest) longStop(ctx context.Context, t *testing.T, l *load) {
	t0 := time.Now()
	for range 6 {
		id, why := l.post(ctx, []byte(`{"kind":"sleep","duration":"40s","timeout":"60s"}`))
		if id == "" {
			t.Fatalf("a long job refused: %s", why)
		}
		l.mu.Lock()
		l.accepted = append(l.accepted, accepted{ID: id, At: time.Now()})
		l.mu.Unlock()
	}
	var victim string
	waitFor(ctx, t, 30*time.Second, "a crewd pod running a long job", func() (bool, string) {
		ps, err := readyPods(ctx, namespace, crewdSelector)
		if err != nil {
			return false, err.Error()
		}
		var busy []string
		for _, p := range names(ps) {
			b, err := workersBusy(ctx, n.client, ps[p])
			busy = append(busy, fmt.Sprintf("%s %d (%v)", p, b, err))
			if b > 0 {
				victim = p
				return true, ""
			}
		}
		return false, strings.Join(busy, ", ")
	})
	w := watchPod(ctx, victim)
	stopLog := followStop(ctx, victim)
	deleted := time.Now()
	if _, err := kube(ctx, "-n", namespace, "delete", "pod", victim, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted pod %s while it ran jobs that outlast its shutdown timeout", victim)
	n.stopped(ctx, t, w, deleted, stopLog)
	waitPods(ctx, t, namespace, crewdSelector, 3, 2*time.Minute)
	phase(t, "the longest stop: 6 jobs of 40 s, a pod running them deleted", t0)
}

// stopLog is a deleted crewd pod's stop as it logged it: the lines of
// the stop sequence (each step with its time, and every warning), and
// the times of its first ("shutdown: readiness off", the SIGTERM's
// arrival) and last line (the summary, just before the exit), by the
// node's clock.
type stopLog struct {
	lines        string
	signal, last time.Time
	incomplete   string // why the log does not give both times
}

// took is how long crewd took from the SIGTERM to its last line, if the
// log says both.
func (s stopLog) took() (time.Duration, bool) {
	if s.signal.IsZero() || s.last.IsZero() {
		return 0, false
	}
	return s.last.Sub(s.signal), true
}

// followStop follows a crewd pod's log from now on; the function it
// returns gives, once the pod has stopped, its stop as it logged it, or
// says the log did not end within 10 s.
func followStop(ctx context.Context, pod string) func() stopLog {
	lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	logs := make(chan []byte, 1)
	go func() {
		defer cancel()
		out, _ := exec.CommandContext(lctx, "kubectl", "-n", namespace, "logs", "-f", pod, "-c", "crewd", "--since=5s").Output()
		logs <- out
	}()
	return func() stopLog {
		select {
		case out := <-logs:
			return parseStop(out)
		case <-time.After(10 * time.Second):
			return stopLog{lines: "(its log did not end within 10 s of its stop)", incomplete: "its log did not end"}
		}
	}
}

// parseStop reads a crewd's JSON log lines from before its SIGTERM to its
// exit.
func parseStop(out []byte) stopLog {
	var s stopLog
	var stop []string
	for line := range strings.Lines(string(out)) {
		var l struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		if l.Msg == "shutdown: readiness off" && s.signal.IsZero() {
			s.signal = l.Time
		}
		if !s.signal.IsZero() {
			s.last = l.Time
		}
		if strings.HasPrefix(l.Msg, "shutdown") || strings.Contains(line, `"level":"WARN"`) {
			stop = append(stop, strings.TrimSpace(line))
		}
	}
	s.lines = strings.Join(stop, "\n")
	if s.signal.IsZero() {
		s.incomplete = "no \"shutdown: readiness off\" line in its log"
	}
	return s
}

// workersBusy reads crew_workers_busy from a crewd's /metrics.
func workersBusy(ctx context.Context, client *http.Client, ip string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ip+":9090/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), `crew_workers_busy{pool="crewd"} `); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("no crew_workers_busy on %s", ip)
}

// stopped requires a deleted crewd pod's container to have exited by
// itself (code 0), and the pod to be gone, within its grace period:
// crewd's whole stop fits in it, the final flush of its traces to a
// collector that never answers included.
//
// The kubelet's grace period runs from its SIGTERM, which on a busy node
// reaches crewd a second or more after the delete; so the exit is
// measured from the SIGTERM's arrival, as crewd logged it, to the exit
// as the kubelet reports it (to the second, counted as the second's
// end), both by the node's clock. The pod object's removal follows the
// exit by a second or more, and is only reported.
func (n *nodeTest) stopped(ctx context.Context, t *testing.T, w *podWatch, deleted time.Time, logged func() stopLog) {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(90 * time.Second):
		t.Errorf("the deleted pod was not gone within 90s")
		return
	case <-ctx.Done():
		return
	}
	stop := logged()
	defer func() { t.Logf("its stop, as it logged it:\n%s", stop.lines) }()
	w.mu.Lock()
	defer w.mu.Unlock()
	took := w.goneAt.Sub(deleted).Seconds()
	from, since := deleted, "the delete"
	if !stop.signal.IsZero() {
		from, since = stop.signal, fmt.Sprintf("its SIGTERM (%.1fs after the delete)", stop.signal.Sub(deleted).Seconds())
	} else {
		t.Logf("the stop is measured from the delete: %s", stop.incomplete)
	}
	exitAt := w.goneAt
	if !w.exitAt.IsZero() {
		exitAt = w.exitAt.Add(time.Second)
	}
	if exitAt.Before(stop.last) {
		exitAt = stop.last
	}
	exited := exitAt.Sub(from).Seconds()
	switch {
	case w.goneAt.IsZero():
		t.Errorf("the watch of the deleted pod ended without its deletion: %v", w.err)
	case w.exit == nil:
		t.Errorf("the deleted pod's last state has no terminated crewd container")
	case *w.exit != 0:
		t.Errorf("the deleted pod's crewd exited with code %d (%s), the pod gone %.1fs after the delete (grace period %ds): killed, not stopped", *w.exit, w.reason, took, w.grace)
	case w.grace < 0 || exited > float64(w.grace)-stopMargin.Seconds():
		t.Errorf("the deleted pod's crewd exited %.0fs after %s (the pod gone %.1fs after the delete): not %v before the kubelet's SIGKILL at its grace period (%ds)", exited, since, took, stopMargin, w.grace)
	default:
		t.Logf("the deleted pod's crewd exited 0 (%s) by %.0fs after %s, within its grace period of %ds less %v; the pod was gone %.1fs after the delete", w.reason, exited, since, w.grace, stopMargin, took)
	}
}

// drainEnd says how kubectl drain ended: its last line.
func drainEnd(err error) string {
	if err == nil {
		return "it completed"
	}
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "disruption budget") {
			return "refused: " + strings.TrimSpace(lines[i])
		}
	}
	return "failed: " + strings.TrimSpace(lines[len(lines)-1])
}

// stalledCollector accepts connections on the trace collector's behalf and
// never answers, as a collector that hangs: crewd's exports wait on it
// (and are dropped), and so does the final flush of a stop, for its bound.
type stalledCollector struct {
	url   string
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// startCollector listens on the node's address, which every pod reaches
// through its bridge.
func startCollector(t *testing.T, ip string) *stalledCollector {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	c := &stalledCollector{url: "http://" + ln.Addr().String(), ln: ln}
	c.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.conns = append(c.conns, conn)
			c.mu.Unlock()
			c.wg.Go(func() { _, _ = io.Copy(io.Discard, conn) })
		}
	})
	return c
}

func (c *stalledCollector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns)
}

func (c *stalledCollector) close() {
	c.ln.Close()
	c.mu.Lock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// diagnose logs what the namespace's pods and events say, after a failure.
func diagnose(ctx context.Context, t *testing.T) {
	for _, args := range [][]string{
		{"-n", namespace, "get", "pods,pvc", "-o", "wide"},
		{"-n", namespace, "get", "events", "--sort-by", ".lastTimestamp"},
	} {
		out, err := kube(ctx, args...)
		t.Logf("kubectl %s:\n%s%v", strings.Join(args, " "), out, errOrEmpty(err))
	}
	ps, _ := pods(ctx, namespace, "app.kubernetes.io/instance="+release)
	for _, p := range ps {
		if !p.ready() {
			out, _ := kube(ctx, "-n", namespace, "logs", p.Metadata.Name, "--all-containers", "--tail", "20")
			t.Logf("logs of %s (not Ready, %d restarts):\n%s", p.Metadata.Name, p.restarts(), out)
		}
	}
}

func errOrEmpty(err error) any {
	if err == nil {
		return ""
	}
	return err
}

package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// netprobeImage is ./netprobe's image, which node.sh builds and imports.
const netprobeImage = "crew-netprobe:node"

// TestNodeNetworkPolicy installs the chart in a namespace of its own and
// checks that its NetworkPolicies are enforced (checkPolicies), and
// nothing else: the check alone, for working on it, and to see it fail on
// a node without an enforcer (NODE_NETPOL=off NODE_RUN='^TestNodeNetworkPolicy$'
// deploy/node/node-test.sh). TestNode and TestNodeKustomize make the
// same check on their installs (the chart's policies, the kustomize
// base's), so the default run has it without another install.
func TestNodeNetworkPolicy(t *testing.T) {
	set, ctx, client := begin(t, 10*time.Minute, nodeTestSkip)
	began := time.Now()
	nodeIP, err := kube(ctx, "get", "node", nodeName, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)
	if err != nil {
		t.Fatal(err)
	}
	collector := startCollector(t, nodeIP)
	defer collector.close()
	namespace = "crewd-netpol"
	install(ctx, t, client, collector.url, set)
	checkPolicies(ctx, t)
	t.Logf("SUMMARY whole test %.0fs", time.Since(began).Seconds())
}

// attempt is one line of netprobe's output: an address tried from a pod
// and what came back.
type attempt struct {
	Target string  `json:"target"`
	Result string  `json:"result"` // connected, http, refused, timeout, error
	Answer string  `json:"answer"`
	Status int     `json:"status"`
	Millis float64 `json:"ms"`
}

// probe is an address to try and what the policies must make of it.
type probe struct {
	target string // netprobe's: tcp:IP:PORT or http://...
	what   string // for the log: whose port
	judge  func(attempt) error
}

// unreachable: the connection refused (kube-router REJECTs) or not
// answered within netprobe's timeout (an enforcer that DROPs). Anything
// else, a connection above all, fails.
func unreachable(a attempt) error {
	if a.Result == "refused" || a.Result == "timeout" {
		return nil
	}
	return fmt.Errorf("want it refused or timed out, got %s: %s", a.Result, a.Answer)
}

// reachableNATS: connected, and the server spoke first as NATS does.
func reachableNATS(a attempt) error {
	if a.Result == "connected" && strings.Contains(a.Answer, "INFO {") {
		return nil
	}
	return fmt.Errorf("want a connection and NATS's INFO line, got %s: %s", a.Result, a.Answer)
}

// apiAnswer judges a request to crewd's API without a token from a pod
// that is not crewd's. The policies must let it through (an HTTP
// answer, not a refused or dropped connection), and crewd must refuse it
// for want of a token: 401 with a Bearer challenge (the API's tokens,
// SECURITY.md). THE PLACE TO CHANGE what the API answers a caller
// without a token, should that change (e.g. to accept any HTTP answer
// from a crewd installed with crewd.auth.insecureNoAuth).
func apiAnswer(a attempt) error {
	if a.Result != "http" {
		return fmt.Errorf("want an HTTP answer, got %s: %s", a.Result, a.Answer)
	}
	if a.Status != 401 || !strings.Contains(a.Answer, "Bearer") {
		return fmt.Errorf("want 401 with a Bearer challenge (no token sent), got %s", a.Answer)
	}
	return nil
}

// checkPolicies proves the namespace's NetworkPolicies enforced, by
// trying from inside pods what an attacker in the namespace would:
//
//   - from a pod in the namespace without crewd's labels (the hostile
//     pod), every NATS server's client port (4222) and route port (6222)
//     and the NATS Service's client port must be unreachable, and so must
//     every crewd pod's metrics and admin port (9090); crewd's API, on
//     each pod's 8080 and through its Service, must answer (apiAnswer);
//   - from a crewd pod (an ephemeral container in it: crewd's own network
//     namespace, address and labels), every NATS server's client port
//     must answer as NATS, and no route port.
//
// Every attempt is logged with its answer, and every wrong one is an
// error.
func checkPolicies(ctx context.Context, t *testing.T) {
	t.Helper()
	t0 := time.Now()
	crewds, err := readyPods(ctx, namespace, crewdSelector)
	if err != nil {
		t.Fatal(err)
	}
	natses, err := readyPods(ctx, namespace, natsSelector)
	if err != nil {
		t.Fatal(err)
	}
	if len(crewds) == 0 || len(natses) == 0 {
		t.Fatalf("network policies: want crewd and NATS pods Ready, have crewd %v, NATS %v", names(crewds), names(natses))
	}
	svcs, err := services(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var hostile []probe
	for _, n := range names(natses) {
		ip := natses[n]
		hostile = append(hostile,
			probe{"tcp:" + net.JoinHostPort(ip, "4222"), "NATS " + n + " client port", unreachable},
			probe{"tcp:" + net.JoinHostPort(ip, "6222"), "NATS " + n + " route port", unreachable})
	}
	for _, s := range svcs {
		for _, p := range s.ports {
			switch {
			case p == 4222:
				hostile = append(hostile, probe{"tcp:" + net.JoinHostPort(s.ip, "4222"), "Service " + s.name + " (NATS client)", unreachable})
			case p == 9090:
				hostile = append(hostile, probe{"tcp:" + net.JoinHostPort(s.ip, "9090"), "Service " + s.name + " (crewd's metrics)", unreachable})
			case s.name == release && s.httpPort == p:
				hostile = append(hostile, probe{"http://" + net.JoinHostPort(s.ip, strconv.Itoa(p)) + "/v1/jobs", "Service " + s.name + " (crewd's API)", apiAnswer})
			}
		}
	}
	for _, c := range names(crewds) {
		ip := crewds[c]
		hostile = append(hostile,
			probe{"tcp:" + net.JoinHostPort(ip, "9090"), "crewd " + c + " metrics and admin port", unreachable},
			probe{"http://" + net.JoinHostPort(ip, "8080") + "/v1/jobs", "crewd " + c + " API", apiAnswer})
	}
	runProbes(ctx, t, "a pod without crewd's labels", hostile, hostilePod(ctx, t))

	victim := names(crewds)[0]
	var own []probe
	for _, n := range names(natses) {
		ip := natses[n]
		own = append(own,
			probe{"tcp:" + net.JoinHostPort(ip, "4222"), "NATS " + n + " client port", reachableNATS},
			probe{"tcp:" + net.JoinHostPort(ip, "6222"), "NATS " + n + " route port", unreachable})
	}
	runProbes(ctx, t, "crewd pod "+victim, own, inPod(ctx, t, victim))
	phase(t, fmt.Sprintf("network policies: %d attempts from a hostile pod, %d from crewd's", len(hostile), len(own)), t0)
}

// runProbes runs netprobe with the probes' targets through start, which
// returns its output, and judges each attempt: every one logged, every
// one wrong an error.
func runProbes(ctx context.Context, t *testing.T, from string, probes []probe, start func(targets []string) string) {
	t.Helper()
	targets := make([]string, len(probes))
	for i, p := range probes {
		targets[i] = p.target
	}
	out := start(targets)
	got := map[string]attempt{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var a attempt
		if json.Unmarshal(sc.Bytes(), &a) == nil && a.Target != "" {
			got[a.Target] = a
		}
	}
	t.Logf("from %s, %d attempts:", from, len(probes))
	var wrong []string
	for _, p := range probes {
		a, ok := got[p.target]
		if !ok {
			wrong = append(wrong, fmt.Sprintf("%s (%s): no answer in netprobe's output:\n%s", p.target, p.what, out))
			continue
		}
		verdict := "as it must"
		if err := p.judge(a); err != nil {
			verdict = "WRONG"
			wrong = append(wrong, fmt.Sprintf("%s (%s): %v", p.target, p.what, err))
		}
		t.Logf("  %-10s %-42s %-38s %-9s %7.1f ms  %s", verdict, p.target, p.what, a.Result, a.Millis, a.Answer)
	}
	for _, w := range wrong {
		t.Errorf("network policy not enforced? from %s: %s", from, w)
	}
}

// svc is a Service with a cluster IP: its ports, and which is "http".
type svc struct {
	name     string
	ip       string
	ports    []int
	httpPort int
}

func services(ctx context.Context) ([]svc, error) {
	out, err := kube(ctx, "-n", namespace, "get", "services", "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				ClusterIP string `json:"clusterIP"`
				Ports     []struct {
					Name string `json:"name"`
					Port int    `json:"port"`
				} `json:"ports"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, err
	}
	var s []svc
	for _, it := range list.Items {
		if it.Spec.ClusterIP == "" || it.Spec.ClusterIP == "None" {
			continue
		}
		v := svc{name: it.Metadata.Name, ip: it.Spec.ClusterIP}
		for _, p := range it.Spec.Ports {
			v.ports = append(v.ports, p.Port)
			if p.Name == "http" {
				v.httpPort = p.Port
			}
		}
		s = append(s, v)
	}
	return s, nil
}

// hostilePod returns a start for runProbes that runs netprobe as a pod of
// its own in the namespace, labelled as nothing the chart or the base
// selects, and returns its log once it has ended; the pod is deleted.
func hostilePod(ctx context.Context, t *testing.T) func([]string) string {
	return func(targets []string) string {
		t.Helper()
		const name = "netprobe-hostile"
		args, _ := json.Marshal(append([]string{"-timeout", "2s"}, targets...))
		manifest := `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  labels: {app.kubernetes.io/name: netprobe, app.kubernetes.io/instance: hostile}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  securityContext: {runAsNonRoot: true, runAsUser: 65534, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: netprobe
      image: ` + netprobeImage + `
      imagePullPolicy: Never
      args: ` + string(args) + `
      resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {memory: 32Mi}}
      securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`
		f := filepath.Join(t.TempDir(), "hostile.yaml")
		if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := kube(ctx, "-n", namespace, "apply", "-f", f); err != nil {
			t.Fatalf("the hostile pod: %v\n%s", err, out)
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = kube(dctx, "-n", namespace, "delete", "pod", name, "--wait=false")
		}()
		waitFor(ctx, t, 90*time.Second, "the hostile pod's probes ended", func() (bool, string) {
			ph, err := kube(ctx, "-n", namespace, "get", "pod", name, "-o", "jsonpath={.status.phase}")
			return ph == "Succeeded" || ph == "Failed", fmt.Sprintf("phase %q %v", ph, err)
		})
		out, err := kube(ctx, "-n", namespace, "logs", name)
		if err != nil {
			t.Fatalf("the hostile pod's log: %v", err)
		}
		return out
	}
}

// inPod returns a start for runProbes that runs netprobe as an ephemeral
// container in the given pod (kubectl debug, the restricted profile):
// from the pod's own address, with its labels; an ephemeral container
// cannot be removed, it stays in the pod's spec, ended.
func inPod(ctx context.Context, t *testing.T, pod string) func([]string) string {
	return func(targets []string) string {
		t.Helper()
		name := fmt.Sprintf("netprobe-%d", time.Now().UnixNano()%1e6)
		args := append([]string{"-n", namespace, "debug", pod, "--image", netprobeImage, "--image-pull-policy", "Never",
			"--profile", "restricted", "-c", name, "--", "/netprobe", "-timeout", "2s"}, targets...)
		if out, err := kube(ctx, args...); err != nil {
			t.Fatalf("netprobe in pod %s: %v\n%s", pod, err, out)
		}
		waitFor(ctx, t, 90*time.Second, "netprobe's probes in pod "+pod+" ended", func() (bool, string) {
			code, err := kube(ctx, "-n", namespace, "get", "pod", pod, "-o",
				`jsonpath={.status.ephemeralContainerStatuses[?(@.name=="`+name+`")].state}`)
			return strings.Contains(code, "terminated"), fmt.Sprintf("state %s %v", code, err)
		})
		out, err := kube(ctx, "-n", namespace, "logs", pod, "-c", name)
		if err != nil {
			t.Fatalf("netprobe's log in pod %s: %v", pod, err)
		}
		return out
	}
}

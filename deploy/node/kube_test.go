package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// kube runs kubectl (on PATH, KUBECONFIG from the environment) and
// returns its standard output; the error carries its standard error.
func kube(ctx context.Context, args ...string) (string, error) {
	return run(ctx, "kubectl", args...)
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()+"\n"+out.String()))
	}
	return out.String(), nil
}

// pod is the part of a Pod the test reads.
type pod struct {
	Metadata struct {
		Name              string     `json:"name"`
		DeletionTimestamp *time.Time `json:"deletionTimestamp"`
	} `json:"metadata"`
	Status struct {
		Phase      string `json:"phase"`
		PodIP      string `json:"podIP"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
		ContainerStatuses []struct {
			Name         string `json:"name"`
			RestartCount int    `json:"restartCount"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func (p pod) ready() bool {
	if p.Metadata.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

func (p pod) restarts() int {
	n := 0
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// pods lists the namespace's pods with the label selector, by name.
func pods(ctx context.Context, ns, selector string) ([]pod, error) {
	out, err := kube(ctx, "-n", ns, "get", "pods", "-l", selector, "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []pod `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Metadata.Name < list.Items[j].Metadata.Name })
	return list.Items, nil
}

// readyPods is the Ready pods of the selector, name -> IP.
func readyPods(ctx context.Context, ns, selector string) (map[string]string, error) {
	ps, err := pods(ctx, ns, selector)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, p := range ps {
		if p.ready() {
			m[p.Metadata.Name] = p.Status.PodIP
		}
	}
	return m, nil
}

// waitPods waits until the selector has exactly n pods, every one Ready
// (none terminating), and returns them, name -> IP.
func waitPods(ctx context.Context, t *testing.T, ns, selector string, n int, within time.Duration) map[string]string {
	t.Helper()
	var got map[string]string
	waitFor(ctx, t, within, fmt.Sprintf("%d pods Ready (%s)", n, selector), func() (bool, string) {
		ps, err := pods(ctx, ns, selector)
		if err != nil {
			return false, err.Error()
		}
		got = map[string]string{}
		var states []string
		for _, p := range ps {
			if p.ready() {
				got[p.Metadata.Name] = p.Status.PodIP
			}
			states = append(states, fmt.Sprintf("%s %s ready=%v", p.Metadata.Name, p.Status.Phase, p.ready()))
		}
		return len(ps) == n && len(got) == n, strings.Join(states, ", ")
	})
	return got
}

// names is a map's keys, sorted.
func names[V any](m map[string]V) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// waitFor polls cond every 250 ms until it holds; the test fails with
// cond's last reason if it does not within the time given.
func waitFor(ctx context.Context, t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not within %v: %s", what, within, why)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// The nats-servers' /jsz monitoring page: each stream's replicas.
type jsz struct {
	Accounts []struct {
		Streams []streamDetail `json:"stream_detail"`
	} `json:"account_details"`
}

type streamDetail struct {
	Name   string `json:"name"`
	Config struct {
		Replicas int `json:"num_replicas"`
	} `json:"config"`
	Cluster struct {
		Leader   string `json:"leader"`
		Replicas []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
			Offline bool   `json:"offline"`
		} `json:"replicas"`
	} `json:"cluster"`
}

func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// streams reads every stream from its leader's /jsz (only the leader
// knows whether its followers are current); servers is pod name -> IP,
// and each server is named after its pod.
func streams(ctx context.Context, client *http.Client, servers map[string]string) (map[string]streamDetail, error) {
	out := map[string]streamDetail{}
	for _, name := range names(servers) {
		var z jsz
		if err := getJSON(ctx, client, "http://"+servers[name]+":8222/jsz?streams=true&config=true", &z); err != nil {
			return nil, err
		}
		for _, a := range z.Accounts {
			for _, s := range a.Streams {
				if s.Cluster.Leader == name {
					out[s.Name] = s
				}
			}
		}
	}
	return out, nil
}

// waitStreams waits until every group of the job store (each
// partition's stream and records' bucket: jobs, KV_jobs, jobs-1, ...) has
// three replicas, a leader and every follower current, and returns the
// groups' leaders by stream.
func waitStreams(ctx context.Context, t *testing.T, client *http.Client, servers func() map[string]string, within time.Duration) map[string]string {
	t.Helper()
	var leaders map[string]string
	waitFor(ctx, t, within, "the job store's streams R3, every follower current", func() (bool, string) {
		ss, err := streams(ctx, client, servers())
		if err != nil {
			return false, err.Error()
		}
		if _, ok := ss["jobs"]; !ok {
			return false, "no leader reports stream jobs"
		}
		if _, ok := ss["KV_jobs"]; !ok {
			return false, "no leader reports stream KV_jobs"
		}
		leaders = map[string]string{}
		for n, s := range ss {
			if !storeGroup.MatchString(n) {
				continue
			}
			switch {
			case s.Config.Replicas != 3:
				return false, fmt.Sprintf("stream %s has %d replicas", n, s.Config.Replicas)
			case len(s.Cluster.Replicas) != 2:
				return false, fmt.Sprintf("stream %s: %d followers", n, len(s.Cluster.Replicas))
			}
			for _, r := range s.Cluster.Replicas {
				if !r.Current || r.Offline {
					return false, fmt.Sprintf("stream %s: follower %s not current", n, r.Name)
				}
			}
			leaders[n] = s.Cluster.Leader
		}
		return true, ""
	})
	return leaders
}

// storeGroup matches the streams of the job store's partitions.
var storeGroup = regexp.MustCompile(`^(KV_)?jobs(-[0-9]+)?$`)

// busiest is the server leading the most of the store's groups, and
// those groups.
func busiest(leaders map[string]string) (string, []string) {
	by := map[string][]string{}
	for g, l := range leaders {
		by[l] = append(by[l], g)
	}
	var best string
	for _, l := range names(by) {
		if len(by[l]) > len(by[best]) {
			best = l
		}
	}
	slices.Sort(by[best])
	return best, by[best]
}

// clientIPs is the addresses of the clients named name connected to the
// server at ip, from its /connz page.
func clientIPs(ctx context.Context, client *http.Client, ip, name string) ([]string, error) {
	var z struct {
		Conns []struct {
			IP   string `json:"ip"`
			Name string `json:"name"`
		} `json:"connections"`
	}
	if err := getJSON(ctx, client, "http://"+ip+":8222/connz?limit=1024", &z); err != nil {
		return nil, err
	}
	var ips []string
	for _, c := range z.Conns {
		if c.Name == name {
			ips = append(ips, c.IP)
		}
	}
	return ips, nil
}

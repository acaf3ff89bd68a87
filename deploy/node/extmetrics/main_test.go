package main

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The rule of deploy/prometheus-adapter/values.yaml, as node.sh passes it.
const backlogQuery = `sum by (namespace) (crew_queue_length{<<.LabelMatchers>>,pool="crewd"}) + sum by (namespace) (crew_submitters_waiting{<<.LabelMatchers>>,pool="crewd"}) + on (namespace) group_left () ( sum by (namespace) (max by (namespace, stream, consumer) (natsjs_consumer_lag{<<.LabelMatchers>>})) or sum by (namespace) (crew_queue_length{<<.LabelMatchers>>,pool="crewd"}) * 0 )`

// fakeProm answers every instant query with result, and records the
// queries.
func fakeProm(t *testing.T, result string) (*httptest.Server, *[]string) {
	var queries []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		queries = append(queries, r.URL.Query().Get("query"))
		_, _ = io.WriteString(w, result)
	}))
	t.Cleanup(s.Close)
	return s, &queries
}

func get(t *testing.T, h http.Handler, path string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var v map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("GET %s: %d %q: %v", path, rec.Code, rec.Body.String(), err)
	}
	return rec.Code, v
}

func TestMetric(t *testing.T) {
	prom, queries := fakeProm(t, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"namespace":"crewd"},"value":[1764000000.5,"520"]}]}}`)
	s := &server{prom: prom.URL, rules: []rule{{Name: "crewd_backlog", Query: backlogQuery}}, client: prom.Client(), log: slog.New(slog.DiscardHandler)}
	h := s.routes()
	code, v := get(t, h, "/apis/external.metrics.k8s.io/v1beta1/namespaces/crewd/crewd_backlog?labelSelector=app%3Dcrewd")
	if code != 200 || v["kind"] != "ExternalMetricValueList" {
		t.Fatalf("%d %v", code, v)
	}
	items := v["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["value"] != "520" || items[0].(map[string]any)["metricName"] != "crewd_backlog" {
		t.Fatalf("items %v", items)
	}
	q := (*queries)[0]
	if strings.Contains(q, "<<") || strings.Count(q, `namespace="crewd",app="crewd"`) != 4 {
		t.Fatalf("the query as sent: %s", q)
	}
	// Discovery: the availability check reads the group version.
	if code, v := get(t, h, "/apis/external.metrics.k8s.io/v1beta1"); code != 200 || v["groupVersion"] != gv {
		t.Fatalf("discovery: %d %v", code, v)
	}
	// An unknown metric, a set-based selector, a bad namespace: refused.
	for path, want := range map[string]int{
		"/apis/external.metrics.k8s.io/v1beta1/namespaces/crewd/nope":                                           404,
		"/apis/external.metrics.k8s.io/v1beta1/namespaces/crewd/crewd_backlog?labelSelector=app+in+%28a%29":     400,
		"/apis/external.metrics.k8s.io/v1beta1/namespaces/cr%22ewd/crewd_backlog":                               400,
		"/apis/external.metrics.k8s.io/v1beta1/namespaces/crewd/crewd_backlog?labelSelector=a%3Db%22%2Cc%3D%7D": 400,
	} {
		if code, v := get(t, h, path); code != want {
			t.Errorf("GET %s: %d, want %d: %v", path, code, want, v)
		}
	}
}

// A query with no series is an error, as with prometheus-adapter: a zero
// would let the HPA scale down on a metric that is not there.
func TestMetricEmpty(t *testing.T) {
	prom, _ := fakeProm(t, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	s := &server{prom: prom.URL, rules: []rule{{Name: "crewd_backlog", Query: backlogQuery}}, client: prom.Client(), log: slog.New(slog.DiscardHandler)}
	if code, v := get(t, s.routes(), "/apis/external.metrics.k8s.io/v1beta1/namespaces/crewd/crewd_backlog"); code != 404 {
		t.Fatalf("%d %v", code, v)
	}
	prom2, _ := fakeProm(t, `{"status":"error","error":"parse error"}`)
	s.prom = prom2.URL
	if code, v := get(t, s.routes(), "/apis/external.metrics.k8s.io/v1beta1/namespaces/crewd/crewd_backlog"); code != 500 || !strings.Contains(v["message"].(string), "parse error") {
		t.Fatalf("%d %v", code, v)
	}
}

func TestParseRules(t *testing.T) {
	if _, err := parseRules([]byte(`[{"name":"crewd_backlog","query":"` + strings.ReplaceAll(backlogQuery, `"`, `\"`) + `"}]`)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`[]`,
		`[{"name":"crewd-backlog","query":"x{<<.LabelMatchers>>}"}]`,
		`[{"name":"a","query":""}]`,
		`[{"name":"a","query":"sum(crew_queue_length)"}]`, // every namespace's sum
		`[{"name":"a","query":"x{<<.LabelMatchers>>}"},{"name":"a","query":"y{<<.LabelMatchers>>}"}]`,
	} {
		if _, err := parseRules([]byte(bad)); err == nil {
			t.Errorf("parseRules(%s) accepted", bad)
		}
	}
}

func TestQuantity(t *testing.T) {
	for f, want := range map[float64]string{520: "520", 0: "0", 1.5: "1500m", 0.0004: "0m", -2.25: "-2250m"} {
		if got := quantity(f); got != want {
			t.Errorf("quantity(%v) = %s, want %s", f, got, want)
		}
	}
}

// Only a verified client certificate of an allowed name reaches the API;
// the probes need none.
func TestRequireClient(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) })
	h := requireClient([]string{"front-proxy-client"}, ok)
	req := func(path string, cn string) int {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if cn != "" {
			r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: cn}}}}}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	if c := req("/readyz", ""); c != 200 {
		t.Errorf("/readyz without a certificate: %d", c)
	}
	if c := req("/apis/external.metrics.k8s.io/v1beta1", ""); c != 401 {
		t.Errorf("the API without a certificate: %d", c)
	}
	if c := req("/apis/external.metrics.k8s.io/v1beta1", "someone"); c != 403 {
		t.Errorf("the API with another name: %d", c)
	}
	if c := req("/apis/external.metrics.k8s.io/v1beta1", "front-proxy-client"); c != 200 {
		t.Errorf("the API with the aggregator's certificate: %d", c)
	}
}

// Command extmetrics serves Kubernetes' external metrics API
// (external.metrics.k8s.io/v1beta1) from Prometheus queries: what
// prometheus-adapter's "external" rules do, for the node (node.sh), where
// prometheus-adapter cannot be built (the module proxy does not serve it).
//
// Its rules are prometheus-adapter's own, as JSON: a list of {"name",
// "query"}, name being the rule's name.as and query its metricsQuery, in
// which <<.LabelMatchers>> becomes namespace="<the request's namespace>"
// plus the request's label selector (equality and inequality only) and
// <<.GroupBy>> becomes namespace. node.sh reads them from
// deploy/prometheus-adapter/values.yaml, so the HPA reads the same metric
// from it as it would from the adapter. A query with no result is an
// error, as with the adapter (the HPA then cannot compute that metric).
//
// It listens with TLS on a certificate it makes at start (the APIService
// skips verifying it, as metrics-server's does on the node) and answers an
// API request only over a client certificate signed by the aggregation
// layer's CA (-client-ca, or read at start from the ConfigMap
// kube-system/extension-apiserver-authentication through the pod's service
// account): only the kube-apiserver, which has authenticated and
// authorized the request, reaches it. /healthz and /readyz are open.
//
// Usage: extmetrics -prometheus http://10.200.0.1:9090 -rules rules.json
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	group   = "external.metrics.k8s.io"
	version = "v1beta1"
	gv      = group + "/" + version
)

// rule is one external metric: its name, and the query that computes it.
type rule struct {
	Name  string `json:"name"`
	Query string `json:"query"`
}

func main() {
	addr := flag.String("addr", ":6443", "where to listen (TLS)")
	prom := flag.String("prometheus", "", "the Prometheus server's URL")
	rulesFile := flag.String("rules", "", "the rules, a JSON list of {name, query}")
	clientCA := flag.String("client-ca", "", "the CA file of the client certificates to accept (the aggregation layer's); empty: read from kube-system/extension-apiserver-authentication")
	allowed := flag.String("allowed-names", "front-proxy-client", "the client certificates' common names to accept, comma-separated (empty: any the CA signed)")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(*addr, *prom, *rulesFile, *clientCA, *allowed, log); err != nil {
		log.Error("extmetrics", "error", err)
		os.Exit(1)
	}
}

func run(addr, prom, rulesFile, clientCA, allowed string, log *slog.Logger) error {
	if prom == "" || rulesFile == "" {
		return errors.New("-prometheus and -rules are required")
	}
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		return err
	}
	rules, err := parseRules(b)
	if err != nil {
		return fmt.Errorf("%s: %w", rulesFile, err)
	}
	var caPEM []byte
	if clientCA != "" {
		caPEM, err = os.ReadFile(clientCA)
	} else {
		caPEM, err = requestHeaderCA(context.Background())
	}
	if err != nil {
		return fmt.Errorf("the client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("the client CA holds no certificate")
	}
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	var names []string
	if allowed != "" {
		names = strings.Split(allowed, ",")
	}
	s := &server{prom: strings.TrimSuffix(prom, "/"), rules: rules, client: &http.Client{Timeout: 10 * time.Second}, log: log}
	srv := &http.Server{
		Addr:              addr,
		Handler:           requireClient(names, s.routes()),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientCAs:    pool,
			// The probes come without one; requireClient refuses the rest.
			ClientAuth: tls.VerifyClientCertIfGiven,
			MinVersion: tls.VersionTLS12,
		},
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	log.Info("serving", "addr", addr, "prometheus", prom, "metrics", ruleNames(rules))
	if err := srv.ListenAndServeTLS("", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// parseRules reads and checks the rules: each with a name that is a
// Prometheus metric name and a query, no name twice.
func parseRules(b []byte) ([]rule, error) {
	var rules []rule
	if err := json.Unmarshal(b, &rules); err != nil {
		return nil, err
	}
	if len(rules) == 0 {
		return nil, errors.New("no rules")
	}
	seen := map[string]bool{}
	for i, r := range rules {
		switch {
		case !metricName.MatchString(r.Name):
			return nil, fmt.Errorf("rule %d: name %q is not a metric name", i, r.Name)
		case strings.TrimSpace(r.Query) == "":
			return nil, fmt.Errorf("rule %s: no query", r.Name)
		case !strings.Contains(r.Query, "<<.LabelMatchers>>"):
			// Without the namespace matcher a rule would answer every
			// namespace's HPA with the sum over all of them.
			return nil, fmt.Errorf("rule %s: the query has no <<.LabelMatchers>>", r.Name)
		case seen[r.Name]:
			return nil, fmt.Errorf("rule %s: twice", r.Name)
		}
		seen[r.Name] = true
	}
	return rules, nil
}

var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

func ruleNames(rules []rule) []string {
	var s []string
	for _, r := range rules {
		s = append(s, r.Name)
	}
	return s
}

type server struct {
	prom   string
	rules  []rule
	client *http.Client
	log    *slog.Logger
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /readyz", ok)
	mux.HandleFunc("GET /livez", ok)
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{apiGroup()}})
	})
	mux.HandleFunc("GET /apis/"+group, func(w http.ResponseWriter, _ *http.Request) {
		g := apiGroup()
		g["kind"], g["apiVersion"] = "APIGroup", "v1"
		writeJSON(w, http.StatusOK, g)
	})
	mux.HandleFunc("GET /apis/"+gv, func(w http.ResponseWriter, _ *http.Request) {
		var res []any
		for _, r := range s.rules {
			res = append(res, map[string]any{"name": r.Name, "singularName": "", "namespaced": true, "kind": "ExternalMetricValueList", "verbs": []string{"get"}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": res})
	})
	mux.HandleFunc("GET /apis/"+gv+"/namespaces/{namespace}/{metric}", s.metric)
	return mux
}

func apiGroup() map[string]any {
	v := map[string]any{"groupVersion": gv, "version": version}
	return map[string]any{"name": group, "versions": []any{v}, "preferredVersion": v}
}

// metric answers the HPA's read of one external metric in one namespace.
func (s *server) metric(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("metric")
	i := slices.IndexFunc(s.rules, func(x rule) bool { return x.Name == name })
	if i < 0 {
		status(w, http.StatusNotFound, "NotFound", fmt.Sprintf("no external metric %q (served: %s)", name, strings.Join(ruleNames(s.rules), ", ")))
		return
	}
	matchers, err := labelMatchers(ns, r.URL.Query().Get("labelSelector"))
	if err != nil {
		status(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	q := render(s.rules[i].Query, matchers)
	samples, err := s.query(r.Context(), q)
	if err != nil {
		s.log.Warn("query", "metric", name, "namespace", ns, "query", q, "error", err)
		status(w, http.StatusInternalServerError, "InternalError", fmt.Sprintf("metric %s: %v", name, err))
		return
	}
	if len(samples) == 0 {
		status(w, http.StatusNotFound, "NotFound", fmt.Sprintf("metric %s in namespace %s: the query returned no series", name, ns))
		return
	}
	items := []any{}
	for _, smp := range samples {
		items = append(items, map[string]any{
			"metricName":   name,
			"metricLabels": smp.labels,
			"timestamp":    smp.at.UTC().Format(time.RFC3339),
			"value":        quantity(smp.value),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"kind": "ExternalMetricValueList", "apiVersion": gv, "metadata": map[string]any{}, "items": items})
}

// render fills in prometheus-adapter's placeholders.
func render(query, matchers string) string {
	return strings.NewReplacer("<<.LabelMatchers>>", matchers, "<<.GroupBy>>", "namespace").Replace(query)
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// labelMatchers is namespace="ns" plus a label selector's terms, as
// PromQL matchers. Only = (==) and != are supported (set-based selectors
// are refused).
func labelMatchers(ns, selector string) (string, error) {
	if !labelValue(ns) {
		return "", fmt.Errorf("namespace %q", ns)
	}
	out := []string{fmt.Sprintf("namespace=%q", ns)}
	for term := range strings.SplitSeq(selector, ",") {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		op := "="
		k, v, found := strings.Cut(term, "!=")
		if found {
			op = "!="
		} else if k, v, found = strings.Cut(term, "=="); !found {
			k, v, found = strings.Cut(term, "=")
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !found || !labelName.MatchString(k) || !labelValue(v) {
			return "", fmt.Errorf("label selector term %q: only key=value and key!=value are supported", term)
		}
		out = append(out, fmt.Sprintf("%s%s%q", k, op, v))
	}
	return strings.Join(out, ","), nil
}

func labelValue(v string) bool {
	return !strings.ContainsAny(v, "\"\\\n{}(),=!")
}

type sample struct {
	labels map[string]string
	at     time.Time
	value  float64
}

// query runs an instant query and returns its vector (or scalar).
func (s *server) query(ctx context.Context, q string) ([]sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.prom+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("prometheus answered %s: %v", resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s", body.Error)
	}
	switch body.Data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(body.Data.Result, &vec); err != nil {
			return nil, err
		}
		var out []sample
		for _, v := range vec {
			smp, err := point(v.Value)
			if err != nil {
				return nil, err
			}
			smp.labels = v.Metric
			if smp.labels == nil {
				smp.labels = map[string]string{}
			}
			out = append(out, smp)
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(body.Data.Result, &v); err != nil {
			return nil, err
		}
		smp, err := point(v)
		smp.labels = map[string]string{}
		return []sample{smp}, err
	}
	return nil, fmt.Errorf("prometheus: a %s result, want a vector", body.Data.ResultType)
}

// point reads Prometheus' [unix seconds, "value"].
func point(v [2]any) (sample, error) {
	ts, ok := v[0].(float64)
	str, ok2 := v[1].(string)
	if !ok || !ok2 {
		return sample{}, fmt.Errorf("prometheus: a sample %v", v)
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return sample{}, err
	}
	if f != f || f > 1e15 || f < -1e15 { // NaN, ±Inf
		return sample{}, fmt.Errorf("prometheus: the value %s", str)
	}
	sec := int64(ts)
	return sample{at: time.Unix(sec, int64((ts-float64(sec))*1e9)), value: f}, nil
}

// quantity is a Kubernetes quantity: whole numbers as they are, others in
// thousandths ("1500m"), as the HPA compares them.
func quantity(f float64) string {
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatInt(int64(f*1000+0.5*sign(f)), 10) + "m"
}

func sign(f float64) float64 {
	if f < 0 {
		return -1
	}
	return 1
}

// requireClient lets through the probes, and every other request only
// with a verified client certificate of an allowed name.
func requireClient(names []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/livez":
			next.ServeHTTP(w, r)
			return
		}
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			status(w, http.StatusUnauthorized, "Unauthorized", "a client certificate of the aggregation layer is required")
			return
		}
		cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
		if len(names) > 0 && !slices.Contains(names, cn) {
			status(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("client %q is not an allowed name", cn))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	writeJSON(w, code, map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure", "message": msg, "reason": reason, "code": code})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// selfSigned is a serving certificate made at start.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "extmetrics"},
		DNSNames:     []string{"localhost", host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// requestHeaderCA reads the aggregation layer's client CA from the
// ConfigMap kube-system/extension-apiserver-authentication, with the pod's
// service account (which needs the Role
// extension-apiserver-authentication-reader there).
func requestHeaderCA(ctx context.Context) ([]byte, error) {
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
	token, err := os.ReadFile(sa + "token")
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(sa + "ca.crt")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" {
		return nil, errors.New("KUBERNETES_SERVICE_HOST is not set: not in a pod (give -client-ca)")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+":"+port+"/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("reading kube-system/extension-apiserver-authentication: %s: %s", resp.Status, b)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cm); err != nil {
		return nil, err
	}
	pem := cm.Data["requestheader-client-ca-file"]
	if pem == "" {
		return nil, errors.New("kube-system/extension-apiserver-authentication has no requestheader-client-ca-file: the apiserver runs without --requestheader-client-ca-file")
	}
	return []byte(pem), nil
}

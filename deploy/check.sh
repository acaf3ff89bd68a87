#!/usr/bin/env bash
# Proves crewd's Kubernetes files (deploy/kustomize, deploy/helm/crewd,
# deploy/prometheus-adapter) without a cluster:
#
#  1. tools at pinned versions (install-tools.sh; the first run builds
#     kube-apiserver and kubectl, ~8 minutes, then they are cached);
#  2. helm lint --strict and helm template of every values variant, and
#     kustomize build of the base and every overlay; the chart refuses
#     contradictory values with a clear message;
#  3. the chart's default/dev/prod/KEDA renders equal the kustomize
#     base/dev/prod/keda builds, object by object (kinds, names, whole spec);
#  4. terminationGracePeriodSeconds > crewd's shutdown timeout and delay in
#     every rendered workload, and every port and target referenced by name
#     resolves; every rendered nats.conf passes nats-server -t and its
#     StatefulSet's grace period covers lame duck mode; the chart's NATS
#     grants and KEDA triggers for 1, 3 and 5 partitions
#     (service/e2e/chart_test.go, run with this helm); bad manifests are
#     rejected;
#  5. kube-score on every render (ignored tests: deploy/README.md);
#  6. every PromQL expression (dashboard, PrometheusRule, KEDA queries,
#     prometheus-adapter rules) parses (promtool); the rules' alerts fire as
#     expected (promtool test rules); the chart's copy of prom/rules has not
#     drifted; a broken expression is rejected;
#  7. a real kube-apiserver (v1.34) on etcd, on 127.0.0.1: KEDA and
#     prometheus-operator CRDs installed, then every rendered object applied
#     with --dry-run=server --validate=strict into namespaces that enforce
#     the "restricted" Pod Security Standard (a PodSecurity warning fails the
#     check); a misspelt field (core object, CRD object) and a pod template
#     that is not restricted are rejected.
#
# Usage: deploy/check.sh   (KEEP=1 keeps the work directory)
# Needs: Go, promtool (Debian prometheus), jq, yq (Debian), openssl, curl;
# root or sudo-free apt-get for etcd the first time.
set -euo pipefail

DEPLOY=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$DEPLOY")
CHART=$DEPLOY/helm/crewd
T0=$SECONDS

WORK=$(mktemp -d "${TMPDIR:-/tmp}/crew-deploy-check.XXXXXX")
R=$WORK/rendered
mkdir -p "$R"
ETCD_PID= APISERVER_PID=
cleanup() {
  local rc=$?
  # Only the two processes this script started, by their ids.
  for pid in $APISERVER_PID $ETCD_PID; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  if [ "${KEEP:-0}" = 1 ] || [ $rc -ne 0 ]; then
    echo "work directory kept: $WORK" >&2
  else
    rm -rf "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

SUMMARY=()
step() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - T0)); }
ok() { printf '  ok  %s\n' "$*"; }
pass() { SUMMARY+=("$*"); }
die() { printf '\nFAIL: %s\n' "$*" >&2; exit 1; }
# docs FILE: the objects of a multi-document YAML file, one JSON per line.
docs() { yq -c 'select(. != null)' "$1"; }
count() { docs "$1" | wc -l | tr -d ' '; }

# expect_failure DESCRIPTION PATTERN COMMAND...: COMMAND must fail, and say
# PATTERN (an extended regexp). The check fails if COMMAND succeeds.
expect_failure() {
  local desc=$1 pattern=$2 out rc=0
  shift 2
  out=$("$@" 2>&1) || rc=$?
  if [ $rc -eq 0 ]; then
    printf '%s\n' "$out" | sed 's/^/    | /' >&2
    die "$desc: accepted, but must be rejected"
  fi
  if ! grep -Eq -- "$pattern" <<<"$out"; then
    printf '%s\n' "$out" | sed 's/^/    | /' >&2
    die "$desc: rejected, but without the expected message /$pattern/"
  fi
  ok "rejected: $desc"
  grep -Eo -m1 -- ".{0,100}($pattern).{0,60}" <<<"$out" | head -n1 | sed 's/^/        .../'
}

# ---------------------------------------------------------------------------
step "1. tools"
BIN=$("$DEPLOY/install-tools.sh" | tail -n1)
export PATH="$BIN:$PATH"
for t in helm kustomize kube-score kubectl kube-apiserver etcd nats-server promtool jq yq openssl curl; do
  command -v "$t" >/dev/null || die "$t is missing"
done
printf '  helm %s, kustomize %s, kube-score %s, kubectl %s, kube-apiserver %s, etcd %s, nats-server %s, promtool %s\n' \
  "$(helm version --short)" "$(kustomize version)" "$(kube-score version | awk '{print $3}' | tr -d ,)" \
  "$(kubectl version --client -o json | jq -r .clientVersion.gitVersion)" \
  "$(kube-apiserver --version | awk '{print $2}')" "$(etcd --version | awk '/etcd Version/ {print $3}')" \
  "$(nats-server --version | awk '{print $2}')" "$(promtool --version 2>&1 | awk 'NR==1 {print $3}')"
pass "tools: pinned versions present in $BIN"

# ---------------------------------------------------------------------------
step "2. render: helm lint --strict + helm template, kustomize build"
# name | namespace | helm arguments. Every documented switch is on in at
# least one variant; the mutually exclusive ones (hpa/keda,
# serviceMonitor/podMonitor) in different variants.
HELM_VARIANTS=(
  "helm-default|crewd-check|"
  "helm-dev|crewd-dev|-f $DEPLOY/helm/values-dev.yaml"
  "helm-prod|crewd|-f $DEPLOY/helm/values-prod.yaml"
  "helm-prod-keda|crewd|-f $DEPLOY/helm/values-prod.yaml --set autoscaling.hpa.enabled=false --set autoscaling.keda.enabled=true"
  "helm-hpa-all|crewd-check|-f $CHART/ci/hpa-all-values.yaml"
  "helm-keda-prometheus|crewd-check|-f $CHART/ci/keda-prometheus-values.yaml"
  "helm-keda-nats|crewd-check|-f $CHART/ci/keda-nats-values.yaml"
  "helm-no-autoscaling|crewd-check|-f $CHART/ci/no-autoscaling-values.yaml"
)
# helm renders for the Kubernetes version check.sh validates against.
KUBE_VERSION=$(kube-apiserver --version | awk '{print $2}')
declare -A NS_OF
for v in "${HELM_VARIANTS[@]}"; do
  IFS='|' read -r name ns args <<<"$v"
  # shellcheck disable=SC2086 # args are words on purpose
  helm lint --strict --quiet "$CHART" --kube-version "$KUBE_VERSION" --namespace "$ns" $args >"$WORK/lint-$name.txt" 2>&1 ||
    { cat "$WORK/lint-$name.txt" >&2; die "helm lint --strict ($name)"; }
  # shellcheck disable=SC2086
  helm template crewd "$CHART" --kube-version "$KUBE_VERSION" --namespace "$ns" $args >"$R/$name.yaml"
  NS_OF[$name]=$ns
  ok "$name: lint clean, $(count "$R/$name.yaml") objects: $(docs "$R/$name.yaml" | jq -r .kind | sort | uniq -c | awk '{printf "%s%s×%s", sep, $2, $1; sep=", "}')"
done
for o in base overlays/dev overlays/prod overlays/keda; do
  name=kustomize-$(basename "$o")
  kustomize build "$DEPLOY/kustomize/$o" >"$R/$name.yaml"
  ns=$(docs "$R/$name.yaml" | jq -r '.metadata.namespace // empty' | sort -u)
  NS_OF[$name]=${ns:-crewd-check}
  ok "$name: $(count "$R/$name.yaml") objects: $(docs "$R/$name.yaml" | jq -r .kind | sort | uniq -c | awk '{printf "%s%s×%s", sep, $2, $1; sep=", "}')"
done
# The tracing component on prod, as a user adds it (components:).
mkdir -p "$WORK/kustomize-traced"
rel=$(realpath --relative-to="$WORK/kustomize-traced" "$DEPLOY/kustomize") # kustomize refuses absolute paths
cat >"$WORK/kustomize-traced/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [$rel/overlays/prod]
components: [$rel/components/tracing]
EOF
kustomize build "$WORK/kustomize-traced" >"$R/kustomize-prod-traced.yaml"
NS_OF[kustomize-prod-traced]=crewd
ok "kustomize-prod-traced (prod + components/tracing): $(count "$R/kustomize-prod-traced.yaml") objects"
pass "render: ${#HELM_VARIANTS[@]} helm variants lint --strict clean and render; 5 kustomize builds (base, dev, prod, keda, prod with tracing)"

# The chart refuses contradictory values, with a message saying why.
expect_failure "helm: HPA and KEDA both on" 'hpa.enabled and autoscaling.keda.enabled are both true' \
  helm template crewd "$CHART" --set autoscaling.keda.enabled=true
expect_failure "helm: ServiceMonitor and PodMonitor both on" 'serviceMonitor.enabled and monitoring.podMonitor.enabled are both true' \
  helm template crewd "$CHART" --set monitoring.serviceMonitor.enabled=true --set monitoring.podMonitor.enabled=true
expect_failure "helm: KEDA from zero pods on the prometheus trigger alone" 'minReplicas is 0 without autoscaling.keda.natsJetStream.enabled' \
  helm template crewd "$CHART" --set autoscaling.hpa.enabled=false --set autoscaling.keda.enabled=true --set autoscaling.keda.minReplicas=0 --set autoscaling.keda.natsJetStream.enabled=false
expect_failure "helm: grace period 25 with shutdownTimeout 25s" 'terminationGracePeriodSeconds \(25\) must be larger than crewd.shutdownTimeout \(25s\)' \
  helm template crewd "$CHART" --set terminationGracePeriodSeconds=25
expect_failure "helm: traces on, grace period 30 with shutdownTimeout 25s (no room for the final flush)" 'must be larger than crewd.shutdownTimeout \(25s\) \+ 5s with crewd.tracing.endpoint set' \
  helm template crewd "$CHART" --set crewd.tracing.endpoint=http://c:4318 --set terminationGracePeriodSeconds=30
expect_failure "helm: shutdownTimeout not a Go duration" 'crewd.shutdownTimeout = "25" is not a Go duration' \
  helm template crewd "$CHART" --set-string crewd.shutdownTimeout=25
expect_failure "helm: shutdownDelay not shorter than shutdownTimeout" 'must be longer than crewd.shutdownDelay' \
  helm template crewd "$CHART" --set crewd.shutdownDelay=25s
expect_failure "helm: a shared NATS behind a NetworkPolicy with no egress" 'crewd.nats.url is "nats://n:4222" but networkPolicy.egress is empty' \
  helm template crewd "$CHART" --set crewd.nats.url=nats://n:4222
expect_failure "helm: KEDA's JetStream trigger on jobs kept in memory" 'natsJetStream.enabled needs a shared NATS' \
  helm template crewd "$CHART" -f "$CHART/ci/keda-nats-values.yaml" --set crewd.nats.url=off --set crewd.nats.credentialsSecret=
expect_failure "helm: KEDA's JetStream trigger on an existing NATS without its monitoring endpoint" 'natsServerMonitoringEndpoint is empty with crewd.nats.url' \
  helm template crewd "$CHART" -f "$CHART/ci/keda-nats-values.yaml" --set autoscaling.keda.natsJetStream.natsServerMonitoringEndpoint=
# The 202 promise: every install either shares a JetStream store replicated
# three ways, or runs one pod on its embedded server with no autoscaler.
expect_failure "helm: the embedded NATS under an HPA" 'embedded NATS server, one per pod\) with an autoscaler' \
  helm template crewd "$CHART" --set nats.enabled=false
expect_failure "helm: the embedded NATS under KEDA" 'embedded NATS server, one per pod\) with an autoscaler' \
  helm template crewd "$CHART" -f "$CHART/ci/keda-prometheus-values.yaml" --set nats.enabled=false
expect_failure "helm: the embedded NATS with three replicas" 'replicaCount is 3 with the embedded NATS server' \
  helm template crewd "$CHART" -f "$CHART/ci/no-autoscaling-values.yaml" --set nats.enabled=false
expect_failure "helm: the bundled cluster with the stream at one replica" 'crewd.nats.replicas is 1 on a shared NATS' \
  helm template crewd "$CHART" --set crewd.nats.replicas=1
expect_failure "helm: prod's existing NATS with the stream at two replicas" 'crewd.nats.replicas is 2 on a shared NATS' \
  helm template crewd "$CHART" -f "$DEPLOY/helm/values-prod.yaml" --set crewd.nats.url=nats://n:4222 --set crewd.nats.replicas=2
expect_failure "helm: more stream replicas than bundled servers" 'crewd.nats.replicas is 5 but the bundled cluster has 3 servers' \
  helm template crewd "$CHART" --set crewd.nats.replicas=5
expect_failure "helm: a bundled cluster of two" 'nats/replicas.: value must be one of 3, 5' \
  helm template crewd "$CHART" --set nats.replicas=2
expect_failure "helm: KEDA's JetStream trigger on another consumer" 'reads stream "jobs", consumer "other", but crewd pulls from "jobs", "crewd"' \
  helm template crewd "$CHART" -f "$CHART/ci/keda-nats-values.yaml" --set autoscaling.keda.natsJetStream.consumer=other
expect_failure "helm: a stream name crewd refuses" "crewd/nats/stream.: 'jobs.x' does not match pattern" \
  helm template crewd "$CHART" --set crewd.nats.stream=jobs.x
expect_failure "helm (values.schema.json): workers that are not a number" "crewd/workers.: 'abc' does not match pattern" \
  helm template crewd "$CHART" --set crewd.workers=abc
expect_failure "helm (values.schema.json): a tracing endpoint that is not a URL" "crewd/tracing/endpoint.: 'collector' does not match pattern" \
  helm template crewd "$CHART" --set crewd.tracing.endpoint=collector
expect_failure "helm (values.schema.json): an HPA with minReplicas 0" 'autoscaling/minReplicas.: minimum: got 0, want 1' \
  helm template crewd "$CHART" --set autoscaling.minReplicas=0
expect_failure "helm: ackWait under a second" 'crewd.nats.ackWait = "500ms": want at least 1s' \
  helm template crewd "$CHART" --set crewd.nats.ackWait=500ms
expect_failure "helm (values.schema.json): 257 partitions" 'crewd/nats/partitions.: maximum: got 257, want 256' \
  helm template crewd "$CHART" --set crewd.nats.partitions=257
pass "chart guards: HPA+KEDA, ServiceMonitor+PodMonitor, KEDA-from-zero without JetStream, grace <= timeout, bad duration, delay >= timeout, a shared NATS without egress, KEDA's JetStream trigger on jobs in memory, on an existing NATS without its endpoint or on another consumer, the embedded NATS under an HPA, under KEDA or with 3 replicas, a shared store below 3 replicas (bundled, prod's existing NATS), more stream replicas than servers, a cluster of 2, a bad stream name, workers not a number, a tracing endpoint not a URL, an HPA from 0 (the last four by values.schema.json), a short ack wait, 257 partitions (values.schema.json): each refused with its message"

# Every install the repo ships keeps the 202 promise: either crewd's jobs go
# to a shared NATS with the stream and bucket created R3 (CREW_NATS_URL set,
# CREW_NATS_REPLICAS=3), or one pod runs on its embedded server with no
# autoscaler (no CREW_NATS_URL, replicas 1, no HPA or ScaledObject).
promise_check() {
  docs "$1" | jq -s -r '
    (map(select(.kind == "Deployment" and .metadata.name == "crewd")) | first) as $d
    | ($d.spec.template.spec.containers[] | select(.name == "crewd") | .env // [] | map({(.name): .value}) | add // {}) as $env
    | (map(select(.kind == "HorizontalPodAutoscaler" or .kind == "ScaledObject")) | length) as $autoscalers
    | if ($env.CREW_NATS_URL // "") == "" then
        (if $autoscalers == 0 and ($d.spec.replicas // 0) == 1 then "ok embedded NATS, one replica, no autoscaler"
         else "FAIL embedded NATS with \($autoscalers) autoscaler(s) and replicas \($d.spec.replicas // "set by an autoscaler")" end)
      elif $env.CREW_NATS_URL == "off" then
        (if $autoscalers == 0 and ($d.spec.replicas // 0) == 1 then "ok jobs in memory, one replica" else "FAIL jobs in memory on several pods" end)
      elif ($env.CREW_NATS_REPLICAS // "1") == "3" then "ok shared NATS \($env.CREW_NATS_URL), stream and bucket R3"
      else "FAIL shared NATS \($env.CREW_NATS_URL) with CREW_NATS_REPLICAS \($env.CREW_NATS_REPLICAS // "unset (1)")" end'
}
n=0
for f in "$R"/*.yaml; do
  out=$(promise_check "$f")
  grep -q '^ok' <<<"$out" || { printf '%s\n' "$out" >&2; die "the 202 promise: $(basename "$f")"; }
  ok "$(basename "$f" .yaml): ${out#ok }"
  n=$((n + 1))
done
out=$(promise_check "$DEPLOY/testdata/unreplicated-store.yaml")
grep -q '^FAIL' <<<"$out" || die "the 202 promise: testdata/unreplicated-store.yaml must fail"
ok "rejected: testdata/unreplicated-store.yaml: ${out#FAIL }"
pass "the 202 promise: all $n renders share an R3 JetStream store or run one pod on the embedded server without an autoscaler; an R1 shared store is rejected"

# ---------------------------------------------------------------------------
step "3. parity: helm renders = kustomize builds"
# Objects keyed by kind/name; compared: the set of kinds and names, and each
# object's whole spec (Deployment: replicas, selector, strategy, pod
# template with its labels, annotations, probes, env, resources, security
# contexts, grace period; Service ports; HPA metrics and behaviour; ...),
# plus a ServiceAccount's automountServiceAccountToken and a ConfigMap's
# data (the NATS servers' nats.conf, text for text). Metadata labels are
# not compared (Helm adds its own). Env lists are compared sorted by name: a
# kustomize patch of one variable moves it to the front, which changes
# nothing for crewd (no $(VAR) references). The chart's helm test hooks
# (its probe Pod and that Pod's NetworkPolicy) are the chart's alone, and
# so are the Secrets of the API's tokens and of the NATS cluster's TLS and
# crewd's NATS password, which the chart makes (generated at install) and
# the base's operator makes (deploy/README.md, "API tokens" and "NATS users
# and TLS"): both mount them alike, which the workloads' specs compare.
canon() {
  docs "$1" | jq -s -S 'map(select(.metadata.annotations["helm.sh/hook"] == null))
    | map(select(.kind != "Secret" or (.metadata.name | test("-(api-tokens|nats-tls|nats-auth)$") | not)))
    | map({key: "\(.kind)/\(.metadata.name)",
    value: {spec, automountServiceAccountToken, data}}) | from_entries
    | (.. | objects | select(has("env")) | .env) |= sort_by(.name)'
}
for pair in helm-default:kustomize-base helm-dev:kustomize-dev helm-prod:kustomize-prod helm-prod-keda:kustomize-keda; do
  h=${pair%%:*} k=${pair##*:}
  canon "$R/$h.yaml" >"$WORK/$h.canon.json"
  canon "$R/$k.yaml" >"$WORK/$k.canon.json"
  if ! diff -u "$WORK/$k.canon.json" "$WORK/$h.canon.json" >"$WORK/$h.diff"; then
    sed 's/^/    /' "$WORK/$h.diff" | head -80 >&2
    die "parity: $h differs from $k (above: - kustomize, + helm)"
  fi
  ok "$h = $k: $(jq -r 'keys | join(", ")' "$WORK/$h.canon.json")"
done
pass "parity: helm default/dev/prod/prod+keda = kustomize base/dev/prod/keda (same kinds and names, identical specs: probes, env, securityContext, grace period, resources, autoscaler; identical ConfigMap data: nats.conf)"

# ---------------------------------------------------------------------------
step "4. grace period > crewd's shutdown timeout and delay"
grace_check() { docs "$1" | jq -s -r -L "$DEPLOY/checks" -f "$DEPLOY/checks/grace.jq"; }
n=0
for f in "$R"/*.yaml; do
  out=$(grace_check "$f")
  [ -n "$out" ] || die "grace: no crewd container found in $(basename "$f")"
  if grep -q '^FAIL' <<<"$out"; then printf '%s\n' "$out" >&2; die "grace: $(basename "$f")"; fi
  n=$((n + $(wc -l <<<"$out")))
  ok "$(basename "$f" .yaml): ${out#ok }"
done
out=$(grace_check "$DEPLOY/testdata/bad-grace.yaml")
[ "$(grep -c '^FAIL' <<<"$out")" -eq 3 ] || { printf '%s\n' "$out" >&2; die "grace: testdata/bad-grace.yaml must fail three times"; }
ok "rejected: testdata/bad-grace.yaml, all three Deployments:"
sed 's/^/        /' <<<"$out"
pass "grace: $n crewd containers in $(ls "$R" | wc -l) renders have terminationGracePeriodSeconds > shutdown timeout (+ 5 s with traces on) and delay; a bad manifest (20 < 25s; default 30 < 1m; traces on with 30 = 25s + 5) is rejected"

step "4b. references: ports and targets named in one object exist in another"
refs_check() { docs "$1" | jq -s -r -f "$DEPLOY/checks/refs.jq"; }
n=0
for f in "$R"/*.yaml; do
  out=$(refs_check "$f")
  if grep -q '^FAIL' <<<"$out"; then printf '%s\n' "$out" >&2; die "references: $(basename "$f")"; fi
  n=$((n + $(wc -l <<<"$out")))
  ok "$(basename "$f" .yaml): $(wc -l <<<"$out") references resolve"
done
out=$(refs_check "$DEPLOY/testdata/bad-refs.yaml")
[ "$(grep -c '^FAIL' <<<"$out")" -eq 3 ] || { printf '%s\n' "$out" >&2; die "references: testdata/bad-refs.yaml must fail three times"; }
ok "rejected: testdata/bad-refs.yaml, all three:"
grep '^FAIL' <<<"$out" | sed 's/^/        /'
pass "references: $n port/target references resolve (Service targetPorts, probes, NetworkPolicy, ServiceMonitor/PodMonitor, scrape annotation, scaleTargetRef); a Service to a missing port, a ServiceMonitor on a missing port and an HPA on a missing Deployment are rejected"

step "4c. traces: a NetworkPolicy lets crewd reach its collector"
egress_check() { docs "$1" | jq -s -r -f "$DEPLOY/checks/egress.jq"; }
n=0
for f in "$R"/*.yaml; do
  out=$(egress_check "$f")
  [ -n "$out" ] || continue
  if grep -q '^FAIL' <<<"$out"; then printf '%s\n' "$out" >&2; die "traces: $(basename "$f")"; fi
  n=$((n + $(wc -l <<<"$out")))
  ok "$(basename "$f" .yaml): ${out#ok }"
done
[ "$n" -ge 2 ] || die "traces: want the chart's hpa-all variant and kustomize-prod-traced to send traces, found $n containers"
out=$(egress_check "$DEPLOY/testdata/bad-egress.yaml")
[ "$(grep -c '^FAIL' <<<"$out")" -eq 2 ] || { printf '%s\n' "$out" >&2; die "traces: testdata/bad-egress.yaml must fail twice"; }
ok "rejected: testdata/bad-egress.yaml, both Deployments:"
sed 's/^/        /' <<<"$out"
pass "traces: $n tracing crewd containers may reach their collector's port and DNS through their NetworkPolicy; a policy without the port, and one without DNS, are rejected"

# ---------------------------------------------------------------------------
step "4d. NATS: every rendered nats.conf passes nats-server -t; its pod starts lame duck mode on stop, and its grace period covers it"
# nats_confs FILE DIR: each ConfigMap's nats.conf in FILE written to
# DIR/<ConfigMap>.conf; prints the paths.
nats_confs() {
  mkdir -p "$2"
  docs "$1" | jq -c 'select(.kind == "ConfigMap" and (.data["nats.conf"]? | type) == "string") | {name: .metadata.name, conf: .data["nats.conf"]}' |
    while read -r cm; do
      jq -r .conf <<<"$cm" >"$2/$(jq -r .name <<<"$cm").conf"
      echo "$2/$(jq -r .name <<<"$cm").conf"
    done
}
# nats_test CONF: the server's own parse of the file (-t: syntax, option
# values such as lame_duck_duration's 30 s minimum, the TLS key pair and
# CA read), with the variables the StatefulSet gives each server, and a
# certificate of a throwaway CA where its Secret would be mounted.
tlsdir="$WORK/nats-tls"
mkdir -p "$tlsdir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=check-ca \
  -keyout "$tlsdir/ca.key" -out "$tlsdir/ca.crt" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=nats \
  -keyout "$tlsdir/tls.key" -out "$tlsdir/tls.crt" 2>/dev/null
nats_test() {
  local t="$WORK/nats-test-${1//\//_}" # in the work directory, never beside the file (compose's is in the tree)
  sed "s#/etc/nats-tls/#$tlsdir/#g" "$1" >"$t"
  POD_NAME=crewd-nats-0 CREWD_NATS_PASSWORD=check nats-server -t -c "$t"
}
nats_grace_check() { docs "$1" | jq -s -r -L "$DEPLOY/checks" -f "$DEPLOY/checks/nats.jq"; }
# The five-server cluster is rendered here only, for its config.
helm template crewd "$CHART" --kube-version "$KUBE_VERSION" --namespace crewd-check --set nats.replicas=5 >"$WORK/helm-nats-5.yaml"
nconf=0 nsts=0
for f in "$R"/*.yaml "$WORK/helm-nats-5.yaml"; do
  name=$(basename "$f" .yaml)
  mapfile -t confs < <(nats_confs "$f" "$WORK/nats/$name")
  for c in "${confs[@]}"; do
    out=$(nats_test "$c" 2>&1) || { printf '%s\n' "$out" >&2; die "nats-server -t: $name, $(basename "$c")"; }
    nconf=$((nconf + 1))
  done
  out=$(nats_grace_check "$f")
  [ "${#confs[@]}" -eq "$(grep -c . <<<"$out" || true)" ] || { printf '%s\n' "$out" >&2; die "nats: $name has ${#confs[@]} nats.conf but $(grep -c . <<<"$out" || true) StatefulSets mounting one"; }
  if grep -q '^FAIL' <<<"$out"; then printf '%s\n' "$out" >&2; die "nats: $name"; fi
  [ "${#confs[@]}" -gt 0 ] || continue
  nsts=$((nsts + ${#confs[@]}))
  ok "$name: nats-server -t: valid; ${out#ok }"
done
[ "$nconf" -ge 8 ] || die "nats: want the bundled cluster in at least 8 renders, found $nconf configs"
out=$(nats_test "$DEPLOY/compose/nats/nats.conf" 2>&1) || { printf '%s\n' "$out" >&2; die "nats-server -t: compose/nats/nats.conf"; }
ok "compose/nats/nats.conf: nats-server -t: valid"
mapfile -t confs < <(nats_confs "$DEPLOY/testdata/bad-nats.yaml" "$WORK/nats/bad")
[ "${#confs[@]}" -eq 4 ] || die "nats: testdata/bad-nats.yaml must hold four nats.conf, found ${#confs[@]}"
expect_failure "testdata/bad-nats.yaml, lame_duck_duration 20s (nats-server -t)" 'invalid lame_duck_duration of 20s, minimum is 30 seconds' \
  nats_test "$WORK/nats/bad/lame-duck-20s.conf"
out=$(nats_grace_check "$DEPLOY/testdata/bad-nats.yaml")
[ "$(grep -c '^FAIL' <<<"$out")" -eq 3 ] || { printf '%s\n' "$out" >&2; die "nats: testdata/bad-nats.yaml must fail the stop check three times"; }
ok "rejected: testdata/bad-nats.yaml, the stop check:"
grep '^FAIL' <<<"$out" | sed 's/^/        /'
pass "nats: $nconf rendered nats.conf (every render with the bundled cluster, and 5 servers) and compose's pass nats-server $(nats-server --version | awk '{print $2}') -t; $nsts StatefulSets have a preStop hook that starts lame duck mode and a grace period 10 s above lame_duck_duration; lame_duck_duration 20s (nats-server -t), a grace period of 30 s, a lame duck grace period not below the duration and a StatefulSet without the hook are rejected"

step "4e. partitions: the chart's NATS grants and KEDA triggers for 1, 3 and 5 partitions (go test)"
# service/e2e/chart_test.go renders the chart with this helm for
# crewd.nats.partitions 1, 3, 5 and the default, and compares its nats.conf
# with jsjobs.PartitionedPermissionsFor and its ScaledObject's
# nats-jetstream triggers with every partition's stream x lane.
out=$(cd "$REPO/service" && go test -count=1 -v -run '^TestChartGrantsPartitionedPermissionsFor$' ./e2e 2>&1) ||
  { printf '%s\n' "$out" | sed 's/^/    /' >&2; die "partitions: service/e2e TestChartGrantsPartitionedPermissionsFor"; }
grep -q -- '--- PASS: TestChartGrantsPartitionedPermissionsFor' <<<"$out" ||
  { printf '%s\n' "$out" | sed 's/^/    /' >&2; die "partitions: TestChartGrantsPartitionedPermissionsFor did not run (skipped?)"; }
ok "$(grep -- '--- PASS: TestChartGrantsPartitionedPermissionsFor' <<<"$out" | sed 's/^--- //')"
pass "partitions: the chart run with 1, 3, 5 and the default 3 partitions sets CREW_JOB_PARTITIONS, grants crewd's NATS user exactly jsjobs.PartitionedPermissionsFor in order, and has partitions x 4 nats-jetstream triggers (every partition's stream x lane)"

# ---------------------------------------------------------------------------
step "5. kube-score"
# Each ignored test is explained in deploy/README.md ("kube-score").
# (The KEDA variants also carry kube-score/ignore: deployment-replicas on
# the Deployment itself: KEDA's HPA owns the count, and kube-score cannot see
# an HPA that KEDA creates at run time.) Two optional tests are turned on.
KUBE_SCORE_IGNORES=(
  container-image-pull-policy
  deployment-has-host-podantiaffinity
)
ks_args=(--enable-optional-test container-seccomp-profile --enable-optional-test container-ports-check)
for t in "${KUBE_SCORE_IGNORES[@]}"; do ks_args+=(--ignore-test "$t"); done
for f in "$R"/*.yaml; do
  if ! kube-score score --output-format ci "${ks_args[@]}" "$f" >"$WORK/kube-score.txt" 2>&1; then
    grep -v '^\[OK\]' "$WORK/kube-score.txt" | sed 's/^/    /' >&2
    die "kube-score: $(basename "$f")"
  fi
  crit=$(grep -c '^\[CRITICAL\]' "$WORK/kube-score.txt" || true)
  warn=$(grep -c '^\[WARNING\]' "$WORK/kube-score.txt" || true)
  [ "$crit" -eq 0 ] || { grep '^\[CRITICAL\]' "$WORK/kube-score.txt" >&2; die "kube-score: critical in $(basename "$f")"; }
  [ "$warn" -eq 0 ] || { grep '^\[WARNING\]' "$WORK/kube-score.txt" >&2; die "kube-score: warning in $(basename "$f")"; }
  ok "$(basename "$f" .yaml): $(grep -c '^\[OK\]' "$WORK/kube-score.txt") passed, 0 warnings, 0 critical"
done
pass "kube-score: every render, 0 critical and 0 warnings (ignored, explained in README: ${KUBE_SCORE_IGNORES[*]})"

# ---------------------------------------------------------------------------
step "6. PromQL: promtool"
# check_exprs FILE: FILE holds one JSON string per line (an expression and
# where it came from, "origin\texpr"); each becomes a recording rule of a
# temporary rule file, and promtool check rules parses every expr.
check_exprs() {
  local list=$1 rules=$1.rules.yml
  jq -R -s 'split("\n") | map(select(length > 0) | split("\t"))
    | {groups: [{name: "extracted", rules: [to_entries[] | {record: "check:expr_\(.key)", expr: .value[1]}]}]}' \
    "$list" >"$rules"
  promtool check rules "$rules"
}
# Grafana's interval variables are not PromQL; replaced the way Grafana does
# (with representative values) before parsing.
grafana_subst() { sed -e 's/\$__rate_interval/5m/g; s/\$__interval/1m/g; s/\$__range/1h/g'; }
EXPRS=$WORK/exprs.tsv
: >"$EXPRS"
# The dashboard: each panel target, and the selectors inside the
# label_values() of its variables.
dash_rendered=$(docs "$R/helm-hpa-all.yaml" | jq -r 'select(.kind == "ConfigMap" and .metadata.labels.grafana_dashboard == "1") | .data["crewd.json"]')
cmp -s <(jq -S . <<<"$dash_rendered") <(jq -S . "$CHART/dashboards/crewd.json") || die "dashboard ConfigMap differs from dashboards/crewd.json"
jq -r '.panels[] | .title as $t | .targets[] | "dashboard: \($t)\t\(.expr)"' "$CHART/dashboards/crewd.json" | grafana_subst >>"$EXPRS"
jq -r '.templating.list[] | select(.type == "query") | "dashboard variable \(.name)\t\(.definition | capture("label_values\\((?<s>.*), *[a-z_]+\\)").s)"' \
  "$CHART/dashboards/crewd.json" >>"$EXPRS"
n_dash=$(wc -l <"$EXPRS")
# KEDA prometheus triggers, from every render that has one.
for f in "$R"/*.yaml; do
  docs "$f" | jq -r --arg f "$(basename "$f" .yaml)" 'select(.kind == "ScaledObject") | .spec.triggers[] | select(.type == "prometheus") | "KEDA query (\($f))\t\(.metadata.query)"' >>"$EXPRS"
done
n_keda=$(( $(wc -l <"$EXPRS") - n_dash ))
# prometheus-adapter: the seriesQuery, and the metricsQuery with its
# placeholders filled in as the adapter does for a Pods metric.
yq -r '(.rules.custom[], .rules.external[]) | "adapter seriesQuery\t\(.seriesQuery)", "adapter metricsQuery\t\(.metricsQuery | gsub("\n"; " "))"' \
  "$DEPLOY/prometheus-adapter/values.yaml" |
  sed -e 's/<<\.GroupBy>>/pod/g' -e 's/<<\.LabelMatchers>>/namespace="crewd",pod=~"crewd-a|crewd-b"/g' -e 's/<<\.Series>>/crew_queue_length/g' >>"$EXPRS"
n_all=$(wc -l <"$EXPRS")
check_exprs "$EXPRS" >"$WORK/promtool.txt" 2>&1 || { cat "$WORK/promtool.txt" >&2; die "promtool: an extracted expression does not parse"; }
ok "$n_all expressions parse: $n_dash from the dashboard, $n_keda KEDA queries, $((n_all - n_dash - n_keda)) from the adapter rules"
# The PrometheusRule: its spec is a rule file as it stands.
for f in helm-hpa-all helm-keda-prometheus helm-keda-nats; do
  docs "$R/$f.yaml" | jq 'select(.kind == "PrometheusRule") | .spec' >"$WORK/$f.rules.json"
  promtool check rules "$WORK/$f.rules.json" >"$WORK/promtool.txt" 2>&1 || { cat "$WORK/promtool.txt" >&2; die "promtool check rules: $f PrometheusRule"; }
done
ok "PrometheusRule: $(jq '[.groups[].rules[]] | length' "$WORK/helm-hpa-all.rules.json") rules pass promtool check rules"
# Its alerts fire when they should, and not when they should not.
cp "$WORK/helm-hpa-all.rules.json" "$WORK/crewd-rules.json"
cp "$DEPLOY/tests/crewd-rules.test.yml" "$WORK/"
promtool test rules "$WORK/crewd-rules.test.yml" >"$WORK/promtool.txt" 2>&1 || { cat "$WORK/promtool.txt" >&2; die "promtool test rules: deploy/tests/crewd-rules.test.yml"; }
ok "promtool test rules deploy/tests/crewd-rules.test.yml: SUCCESS"
# The chart's copy of prom/rules/crew-rules.yml has not drifted.
norm() { jq -S '[.groups[] | select(.name == "crew") | .rules[] | {record, alert, expr: (.expr | gsub("\\s+"; " ")), for, labels}]'; }
if ! diff <(yq '.' "$REPO/prom/rules/crew-rules.yml" | norm) <(norm <"$WORK/helm-hpa-all.rules.json") >"$WORK/drift.diff"; then
  cat "$WORK/drift.diff" >&2
  die "the chart's group crew differs from prom/rules/crew-rules.yml"
fi
ok "group crew = prom/rules/crew-rules.yml (job:crew_backlog:sum, CrewQueueSaturated)"
# A broken expression must be caught by the same path.
cp "$DEPLOY/testdata/bad-promql.tsv" "$WORK/bad.tsv"
expect_failure "testdata/bad-promql.tsv (a missing parenthesis)" 'unclosed left parenthesis|parse error|could not parse' check_exprs "$WORK/bad.tsv"
pass "promql: $n_all extracted expressions (dashboard $n_dash, KEDA $n_keda, adapter $((n_all - n_dash - n_keda))) and the PrometheusRule parse; alert unit tests pass; group crew = prom/rules; a broken expression is rejected"

# ---------------------------------------------------------------------------
step "7. kube-apiserver: CRDs, then every object with --dry-run=server --validate=strict, Pod Security restricted"
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
}
ETCD_PORT=$(free_port) ETCD_PEER_PORT=$(free_port) API_PORT=$(free_port)
mkdir -p "$WORK/etcd" "$WORK/pki"
etcd --name check --data-dir "$WORK/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "check=http://127.0.0.1:$ETCD_PEER_PORT" --logger zap --log-level error \
  >"$WORK/etcd.log" 2>&1 &
ETCD_PID=$!
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 && break
  kill -0 $ETCD_PID 2>/dev/null || { cat "$WORK/etcd.log" >&2; die "etcd exited"; }
  sleep 0.1
done
ok "etcd $(etcd --version | awk '/etcd Version/ {print $3}') on 127.0.0.1:$ETCD_PORT (pid $ETCD_PID)"

openssl genrsa -out "$WORK/pki/sa.key" 2048 2>/dev/null
TOKEN=$(openssl rand -hex 24)
echo "$TOKEN,admin,admin,system:masters" >"$WORK/pki/tokens.csv"
kube-apiserver \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
  --cert-dir "$WORK/pki" \
  --token-auth-file "$WORK/pki/tokens.csv" --authorization-mode AlwaysAllow \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$WORK/pki/sa.key" --service-account-signing-key-file "$WORK/pki/sa.key" \
  --service-cluster-ip-range 10.96.0.0/16 \
  >"$WORK/apiserver.log" 2>&1 &
APISERVER_PID=$!
export KUBECONFIG=$WORK/kubeconfig
kubectl config set-cluster check --server "https://127.0.0.1:$API_PORT" --certificate-authority "$WORK/pki/apiserver.crt" >/dev/null
kubectl config set-credentials admin --token "$TOKEN" >/dev/null
kubectl config set-context check --cluster check --user admin >/dev/null
kubectl config use-context check >/dev/null
for i in $(seq 600); do
  [ "$(kubectl get --raw /readyz 2>/dev/null)" = ok ] && break
  kill -0 $APISERVER_PID 2>/dev/null || { tail -30 "$WORK/apiserver.log" >&2; die "kube-apiserver exited"; }
  [ "$i" -lt 600 ] || { tail -30 "$WORK/apiserver.log" >&2; die "kube-apiserver not ready after 60 s"; }
  sleep 0.1
done
ok "kube-apiserver $(kubectl version -o json | jq -r .serverVersion.gitVersion) ready on https://127.0.0.1:$API_PORT (pid $APISERVER_PID) after $((SECONDS - T0))s"

CRDS=$(dirname "$BIN")/crds
kubectl apply --server-side -f "$CRDS"/keda-* -f "$CRDS"/prometheus-operator-* >"$WORK/crds.txt"
kubectl wait --for condition=Established --timeout 60s crd --all >/dev/null
ok "CRDs established: $(kubectl get crd -o name | sed 's#.*/##' | grep -E '^(scaledobjects|servicemonitors|podmonitors|prometheusrules)\.' | tr '\n' ' ')($(kubectl get crd -o name | wc -l) in all)"

# Namespaces that enforce (and warn about) the "restricted" Pod Security
# Standard: the PodSecurity admission plugin then warns about any pod
# template that is not restricted (runAsNonRoot, no privilege escalation,
# capabilities dropped, a seccomp profile...), and a warning fails the check.
for ns in $(printf '%s\n' "${NS_OF[@]}" | sort -u); do
  kubectl create namespace "$ns" >/dev/null
  kubectl label namespace "$ns" pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/warn=restricted >/dev/null
  # The default ServiceAccount a cluster's controller manager makes in
  # every namespace (this apiserver runs without one): a bare Pod, the
  # chart's helm test hook, is refused without it.
  kubectl -n "$ns" create serviceaccount default >/dev/null
done
# dry_run NAMESPACE FILE: server-side dry run, strict field validation, and
# no PodSecurity warning.
dry_run() {
  local out rc=0
  out=$(kubectl apply --dry-run=server --validate=strict -n "$1" -f "$2" 2>&1) || rc=$?
  printf '%s\n' "$out"
  [ $rc -eq 0 ] || return $rc
  if grep -q 'would violate PodSecurity' <<<"$out"; then return 3; fi
}
total=0
for f in "$R"/*.yaml; do
  name=$(basename "$f" .yaml)
  if ! dry_run "${NS_OF[$name]}" "$f" >"$WORK/apply.txt" 2>&1; then
    cat "$WORK/apply.txt" >&2
    die "server dry-run: $name"
  fi
  n=$(grep -c '(server dry run)$' "$WORK/apply.txt" || true)
  [ "$n" -eq "$(count "$f")" ] || { cat "$WORK/apply.txt" >&2; die "server dry-run: $name: $n of $(count "$f") objects"; }
  total=$((total + n))
  ok "$name: $n objects accepted in namespace ${NS_OF[$name]}"
done
pass "apiserver: $total objects from $(ls "$R" | wc -l) renders accepted by kube-apiserver $KUBE_VERSION with --dry-run=server --validate=strict, in namespaces enforcing Pod Security \"restricted\", without a warning"

expect_failure "testdata/misspelt-field.yaml (terminationGracePeriodSecond)" 'unknown field "spec.template.spec.terminationGracePeriodSecond"' \
  dry_run crewd-check "$DEPLOY/testdata/misspelt-field.yaml"
expect_failure "testdata/misspelt-scaledobject.yaml (pollingIntervall, a CRD field)" 'unknown field "spec.pollingIntervall"' \
  dry_run crewd-check "$DEPLOY/testdata/misspelt-scaledobject.yaml"
expect_failure "testdata/not-restricted.yaml (no restricted security context)" 'would violate PodSecurity "restricted:latest"' \
  dry_run crewd-check "$DEPLOY/testdata/not-restricted.yaml"
pass "apiserver: a misspelt Deployment field and a misspelt ScaledObject field are rejected (strict field validation), and so is a pod template that is not restricted (PodSecurity)"

# ---------------------------------------------------------------------------
step "summary"
for s in "${SUMMARY[@]}"; do printf '  PASS  %s\n' "$s"; done
printf '\nall checks passed in %ds\n' $((SECONDS - T0))

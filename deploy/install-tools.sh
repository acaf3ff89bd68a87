#!/usr/bin/env bash
# Installs the tools deploy/check.sh needs, each at a pinned version, into
# one directory (printed at the end; check.sh puts it first on PATH):
#
#   ${CREW_DEPLOY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crew-deploy}/bin
#
# A tool already there at the pinned version is kept, so a second run costs
# a few seconds. Everything Go comes through the Go module proxy; etcd comes
# from Debian (apt-get, only when missing). Nothing is pulled from an image
# registry.
#
# Usage: deploy/install-tools.sh            (everything)
#        deploy/install-tools.sh apiserver  (some: base helm kustomize
#                                            kube-score etcd apiserver kubectl crds
#                                            nats-server node)
#        node: what node/node.sh runs besides etcd, kube-apiserver and
#        kubectl: kubelet kube-proxy kube-controller-manager kube-scheduler
#        (bin/), the CNI plugins (cni/bin/, kept off PATH: one is named
#        bridge), coredns, metrics-server and kube-router (bin/).
set -euo pipefail

# ---- pins -------------------------------------------------------------
HELM_VERSION=v3.22.0            # helm.sh/helm/v3/cmd/helm
KUSTOMIZE_VERSION=v5.8.2        # sigs.k8s.io/kustomize/kustomize/v5
KUBE_SCORE_VERSION=v1.20.0      # github.com/zegl/kube-score/cmd/kube-score
K8S_VERSION=v1.34.1             # k8s.io/kubernetes: kube-apiserver and kubectl
K8S_STAGING_VERSION=v0.34.1     # the k8s.io/* staging modules of that release
KEDA_VERSION=v2.21.0            # github.com/kedacore/keda/v2: CRDs only
PROM_OPERATOR_VERSION=v0.85.0   # github.com/prometheus-operator/prometheus-operator: CRDs only
NATS_SERVER_VERSION=v2.15.2     # github.com/nats-io/nats-server/v2: nats-server -t, and the image of compose/
# node/node.sh's one-node cluster: the kubelet, kube-proxy, the controller
# manager and the scheduler of K8S_VERSION, and:
CNI_PLUGINS_VERSION=v1.10.0     # github.com/containernetworking/plugins: bridge, host-local, loopback, portmap
COREDNS_VERSION=v1.15.0         # github.com/coredns/coredns, with COREDNS_PLUGINS only
COREDNS_PLUGINS="errors health ready kubernetes metrics forward cache loop reload loadbalance log"
METRICS_SERVER_VERSION=v0.9.0   # sigs.k8s.io/metrics-server: the resource metrics an HPA reads
# The NetworkPolicy enforcer: kube-router's firewall alone (iptables and
# ipsets). The SIG's kube-network-policies (v0.8.0 on the proxy) needs the
# kernel's nftables queue expression (CONFIG_NFT_QUEUE), which this
# machine's kernel lacks (deploy/README.md, "What enforces the policies").
KUBE_ROUTER_VERSION=v2.1.0      # github.com/cloudnativelabs/kube-router/v2: the only version the proxy serves

CACHE=${CREW_DEPLOY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crew-deploy}
BIN=$CACHE/bin
CRDS=$CACHE/crds
mkdir -p "$BIN" "$CRDS"
export GOBIN=$BIN
export GOFLAGS=-buildvcs=false
# Tools at their own pinned versions, never the repository's workspace.
export GOWORK=off
# Use the Go that is installed; never download another toolchain.
export GOTOOLCHAIN=local

log() { printf '[install-tools] %s\n' "$*" >&2; }

# has NAME PATTERN: BIN/NAME exists and its version output contains PATTERN.
has() {
  local out
  [ -x "$BIN/$1" ] || return 1
  case $1 in
    helm) out=$("$BIN/helm" version --short 2>/dev/null) ;;
    kustomize) out=$("$BIN/kustomize" version 2>/dev/null) ;;
    kube-score) out=$("$BIN/kube-score" version 2>/dev/null) ;;
    kube-apiserver) out=$("$BIN/kube-apiserver" --version 2>/dev/null) ;;
    kubectl) out=$("$BIN/kubectl" version --client 2>/dev/null) ;;
    nats-server) out=$("$BIN/nats-server" --version 2>/dev/null) ;;
    kubelet | kube-proxy | kube-controller-manager | kube-scheduler) out=$("$BIN/$1" --version 2>/dev/null) ;;
    coredns) out="$("$BIN/coredns" -version 2>/dev/null | head -n1) $(cat "$BIN/coredns.plugins" 2>/dev/null)" ;;
    metrics-server) out=$(cat "$BIN/metrics-server.version" 2>/dev/null) ;;
    kube-router) out=$("$BIN/kube-router" --version 2>&1) ;;
    *) out= ;;
  esac
  [[ $out == *"$2"* ]]
}

install_helm() {
  if has helm "$HELM_VERSION"; then return; fi
  log "go install helm $HELM_VERSION"
  # The ldflags of helm's own Makefile: its version (else "v3.x-dev"), and
  # the Kubernetes version it assumes without a cluster (else v1.20, which
  # a chart's kubeVersion constraint refuses): client-go's minor, major 1.
  local gomod cgo minor p=helm.sh/helm/v3
  gomod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  cgo=$(awk '$1 == "k8s.io/client-go" {print $2}' "$gomod")
  minor=$(echo "$cgo" | cut -d. -f2)
  go install -ldflags "-s -w -X $p/internal/version.version=$HELM_VERSION -X $p/internal/version.gitTreeState=clean \
    -X $p/pkg/lint/rules.k8sVersionMajor=1 -X $p/pkg/lint/rules.k8sVersionMinor=$minor \
    -X $p/pkg/chartutil.k8sVersionMajor=1 -X $p/pkg/chartutil.k8sVersionMinor=$minor" \
    "$p/cmd/helm@$HELM_VERSION"
}

install_kustomize() {
  if has kustomize "$KUSTOMIZE_VERSION"; then return; fi
  log "go install kustomize $KUSTOMIZE_VERSION"
  go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  # kustomize takes its version from the module's build info: v5.8.2.
}

install_kube_score() {
  if has kube-score "${KUBE_SCORE_VERSION#v}"; then return; fi
  log "go install kube-score $KUBE_SCORE_VERSION"
  go install -ldflags "-X main.version=${KUBE_SCORE_VERSION#v}" \
    "github.com/zegl/kube-score/cmd/kube-score@$KUBE_SCORE_VERSION"
}

# apt_install PACKAGE...: Debian packages, with apt-get update only when
# the package lists are too old to know them.
apt_install() {
  log "apt-get install $* (Debian)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 || {
    apt-get update >/dev/null
    apt-get install -y --no-install-recommends "$@" >/dev/null
  }
}

# The small tools check.sh calls, from Debian when missing: promtool
# (package prometheus), jq, yq (the jq wrapper), openssl, curl, ss.
install_base() {
  local need=()
  command -v promtool >/dev/null || need+=(prometheus)
  command -v jq >/dev/null || need+=(jq)
  command -v yq >/dev/null || need+=(yq)
  command -v openssl >/dev/null || need+=(openssl)
  command -v curl >/dev/null || need+=(curl ca-certificates)
  command -v ss >/dev/null || need+=(iproute2)
  if [ ${#need[@]} -gt 0 ]; then apt_install "${need[@]}"; fi
}

install_etcd() {
  if command -v etcd >/dev/null; then return; fi
  apt_install etcd-server
  # Debian starts the packaged etcd as a service on 2379; check.sh runs its
  # own on other ports, so the service is stopped to leave the machine quiet.
  if command -v systemctl >/dev/null && systemctl is-active --quiet etcd 2>/dev/null; then
    systemctl stop etcd || true
    systemctl disable etcd >/dev/null 2>&1 || true
  fi
}

# k8s_module DIR: a throwaway module that builds k8s.io/kubernetes commands.
# k8s.io/kubernetes's go.mod points every k8s.io/* staging module at
# ./staging/src/..., which is not in its module zip, so a consumer has to
# replace each of them with the published module of the same release
# (kubernetes v1.X.Y <-> staging v0.X.Y). The list is read from the pinned
# release's own go.mod, so it is complete for that release.
k8s_module() {
  local dir=$1 kmod mods m
  kmod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  mapfile -t mods < <(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$kmod")
  [ "${#mods[@]}" -gt 10 ] || { log "no staging replaces found in $kmod"; return 1; }
  {
    echo "module crew-deploy/k8s-tools"
    echo
    echo "go 1.24.0"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    for m in "${mods[@]}"; do echo "	$m => $m $K8S_STAGING_VERSION"; done
    echo ")"
    echo
    echo "tool ("
    for m in "${K8S_COMMANDS[@]}"; do echo "	k8s.io/kubernetes/cmd/$m"; done
    echo ")"
  } >"$dir/go.mod"
  (cd "$dir" && go mod tidy)
}

# The commands it builds.
K8S_COMMANDS=(kube-apiserver kubectl kubelet kube-proxy kube-controller-manager kube-scheduler)

# k8s_dir: that module's directory, kept in the cache (made once, again
# when it lacks one of K8S_COMMANDS; a half-made one is never kept).
k8s_dir() {
  local dir=$CACHE/k8s-tools-$K8S_VERSION m
  for m in "${K8S_COMMANDS[@]}"; do
    grep -q "k8s.io/kubernetes/cmd/$m\$" "$dir/go.mod" 2>/dev/null || rm -f "$dir/go.sum"
  done
  if [ ! -f "$dir/go.sum" ]; then
    log "preparing a module for k8s.io/kubernetes $K8S_VERSION in $dir"
    rm -rf "$dir" "$dir.tmp" && mkdir -p "$dir.tmp"
    k8s_module "$dir.tmp" >&2
    mv "$dir.tmp" "$dir"
  fi
  echo "$dir"
}

# The version stamp Kubernetes' own build (hack/lib/version.sh) sets.
k8s_ldflags() {
  local p=k8s.io/component-base/version
  local maj=${K8S_VERSION#v}; maj=${maj%%.*}
  local min=${K8S_VERSION#v*.}; min=${min%%.*}
  echo "-s -w -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$maj -X $p.gitMinor=$min -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
}

install_apiserver() {
  if has kube-apiserver "Kubernetes $K8S_VERSION"; then return; fi
  local dir; dir=$(k8s_dir)
  log "building kube-apiserver $K8S_VERSION (about 6 minutes on 2 cores; cached afterwards)"
  (cd "$dir" && go build -trimpath -ldflags "$(k8s_ldflags)" -o "$BIN/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$BIN/kube-apiserver.tmp" "$BIN/kube-apiserver"
}

# kubectl: Debian 12's kubernetes-client is 1.20, too old for what check.sh
# needs (--validate=strict, i.e. server-side field validation, came in 1.25
# and went GA in 1.27), so kubectl is built from the same k8s.io/kubernetes
# release as the apiserver, which also keeps client and server skew at zero.
install_kubectl() {
  if has kubectl "$K8S_VERSION"; then return; fi
  local dir; dir=$(k8s_dir)
  log "building kubectl $K8S_VERSION"
  (cd "$dir" && go build -trimpath -ldflags "$(k8s_ldflags)" -o "$BIN/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl)
  mv "$BIN/kubectl.tmp" "$BIN/kubectl"
}

# The node's Kubernetes daemons, built together (they share most of their
# packages with each other and with kube-apiserver).
install_node_k8s() {
  local need=() m dir
  for m in kubelet kube-proxy kube-controller-manager kube-scheduler; do
    has "$m" "Kubernetes $K8S_VERSION" || need+=("$m")
  done
  [ ${#need[@]} -gt 0 ] || return 0
  dir=$(k8s_dir)
  log "building ${need[*]} $K8S_VERSION"
  rm -rf "$BIN/.k8s-tmp" && mkdir -p "$BIN/.k8s-tmp"
  (cd "$dir" && go build -trimpath -ldflags "$(k8s_ldflags)" -o "$BIN/.k8s-tmp/" "${need[@]/#/k8s.io/kubernetes/cmd/}")
  for m in "${need[@]}"; do mv "$BIN/.k8s-tmp/$m" "$BIN/$m"; done
  rmdir "$BIN/.k8s-tmp"
}

# The CNI plugins the node's conflist names, in cni/bin (a stamp file says
# which version).
install_cni() {
  local dir=$CACHE/cni/bin p
  [ "$(cat "$dir/.version" 2>/dev/null)" = "$CNI_PLUGINS_VERSION" ] && return 0
  log "go install CNI plugins $CNI_PLUGINS_VERSION"
  mkdir -p "$dir"
  local pkgs=()
  for p in main/bridge main/loopback ipam/host-local meta/portmap; do
    pkgs+=("github.com/containernetworking/plugins/plugins/$p@$CNI_PLUGINS_VERSION")
  done
  CGO_ENABLED=0 GOBIN=$dir go install -trimpath -ldflags "-s -w" "${pkgs[@]}"
  echo "$CNI_PLUGINS_VERSION" >"$dir/.version"
}

# CoreDNS with the plugins a cluster's DNS needs (COREDNS_PLUGINS), not
# the dozens of cloud backends of its own build: a main package of a
# throwaway module, static (it runs on scratch).
install_coredns() {
  if has coredns "CoreDNS-${COREDNS_VERSION#v} $COREDNS_PLUGINS"; then return; fi
  log "building CoreDNS $COREDNS_VERSION with: $COREDNS_PLUGINS"
  local dir=$CACHE/coredns-build p
  rm -rf "$dir" && mkdir -p "$dir"
  {
    echo "// Code generated by install-tools.sh. DO NOT EDIT."
    echo "package main"
    echo
    echo "import ("
    echo "	\"github.com/coredns/coredns/coremain\""
    for p in $COREDNS_PLUGINS; do echo "	_ \"github.com/coredns/coredns/plugin/$p\""; done
    echo ")"
    echo
    echo "func main() { coremain.Run() }"
  } >"$dir/main.go"
  printf 'module crew-deploy/coredns\n\ngo 1.26.0\n\nrequire github.com/coredns/coredns %s\n' "$COREDNS_VERSION" >"$dir/go.mod"
  (cd "$dir" && go mod tidy >&2 &&
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" -o "$BIN/coredns.tmp" .)
  mv "$BIN/coredns.tmp" "$BIN/coredns"
  echo "$COREDNS_PLUGINS" >"$BIN/coredns.plugins"
}

# metrics-server, static (it runs on scratch); its version in a stamp file
# (the binary's own says v0.0.0 when built by go install).
install_metrics_server() {
  if [ -x "$BIN/metrics-server" ] && has metrics-server "$METRICS_SERVER_VERSION"; then return; fi
  log "go install metrics-server $METRICS_SERVER_VERSION"
  CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/metrics-server/cmd/metrics-server@$METRICS_SERVER_VERSION"
  echo "$METRICS_SERVER_VERSION" >"$BIN/metrics-server.version"
}

# kube-router, static, with its version stamped as its Makefile does; the
# node runs only its firewall (--run-firewall), as a host process.
install_kube_router() {
  if has kube-router "version $KUBE_ROUTER_VERSION,"; then return; fi
  log "go install kube-router $KUBE_ROUTER_VERSION (its network policy firewall; about 2.5 minutes on 2 cores)"
  local p=github.com/cloudnativelabs/kube-router/v2
  CGO_ENABLED=0 go install -trimpath -ldflags "-s -w -X $p/pkg/version.Version=$KUBE_ROUTER_VERSION -X $p/pkg/version.BuildDate=1970-01-01T00:00:00Z" \
    "$p/cmd/kube-router@$KUBE_ROUTER_VERSION"
}

# nats-server: check.sh tests every rendered nats.conf with it (-t), and
# compose/build-images.sh puts the same binary into its scratch image:
# static, so it runs in an image with nothing else. About 45 s to build.
install_nats_server() {
  if has nats-server "nats-server: $NATS_SERVER_VERSION"; then return; fi
  log "go install nats-server $NATS_SERVER_VERSION"
  CGO_ENABLED=0 go install -trimpath -ldflags '-s -w' "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION"
}

# CRDs of the operators the chart can target, from their Go module zips
# (the proxy serves them; nothing from GitHub or a registry).
install_crds() {
  local d
  if [ ! -f "$CRDS/keda-$KEDA_VERSION/.done" ]; then
    log "KEDA $KEDA_VERSION CRDs"
    d=$(go mod download -json "github.com/kedacore/keda/v2@$KEDA_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    rm -rf "$CRDS/keda-$KEDA_VERSION" && mkdir -p "$CRDS/keda-$KEDA_VERSION"
    cp "$d"/config/crd/bases/*.yaml "$CRDS/keda-$KEDA_VERSION/"
    touch "$CRDS/keda-$KEDA_VERSION/.done"
  fi
  if [ ! -f "$CRDS/prometheus-operator-$PROM_OPERATOR_VERSION/.done" ]; then
    log "prometheus-operator $PROM_OPERATOR_VERSION CRDs"
    d=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROM_OPERATOR_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    rm -rf "$CRDS/prometheus-operator-$PROM_OPERATOR_VERSION" && mkdir -p "$CRDS/prometheus-operator-$PROM_OPERATOR_VERSION"
    cp "$d"/example/prometheus-operator-crd/*.yaml "$CRDS/prometheus-operator-$PROM_OPERATOR_VERSION/"
    touch "$CRDS/prometheus-operator-$PROM_OPERATOR_VERSION/.done"
  fi
  chmod -R u+w "$CRDS"
}

command -v go >/dev/null || { log "go is not on PATH (expected /usr/local/go/bin)"; exit 1; }
if [ $# -eq 0 ]; then
  set -- base helm kustomize kube-score etcd crds nats-server kubectl apiserver
fi
for t in "$@"; do
  case $t in
    base) install_base ;;
    helm) install_helm ;;
    kustomize) install_kustomize ;;
    kube-score) install_kube_score ;;
    etcd) install_etcd ;;
    apiserver) install_apiserver ;;
    kubectl) install_kubectl ;;
    crds) install_crds ;;
    nats-server) install_nats_server ;;
    node) install_node_k8s; install_cni; install_coredns; install_metrics_server; install_kube_router ;;
    *) log "unknown tool: $t"; exit 2 ;;
  esac
done
echo "$BIN"

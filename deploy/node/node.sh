#!/usr/bin/env bash
# A one-node Kubernetes built from source on this machine, for the chart and
# the kustomize files to run real pods on (deploy/README.md, "On a real
# node"):
#
#   etcd (Debian's etcd-server), kube-apiserver, kube-controller-manager
#   (with its host-path provisioner: a StatefulSet's PVCs bind),
#   kube-scheduler, kubelet (cgroupfs driver), kube-proxy (iptables),
#   containerd (Debian's, 1.6) with its CRI plugin and runc, the CNI bridge
#   plugins, CoreDNS, metrics-server (an HPA on CPU works), kube-router's
#   firewall (it enforces NetworkPolicies with iptables and ipsets; with
#   NODE_NETPOL=off the node runs without it and ignores them, as the CNI
#   bridge alone does); every binary
#   pinned in ../install-tools.sh and cached; Prometheus (Debian's, on the
#   node's address, scraping the pods by their prometheus.io annotations)
#   and extmetrics (./extmetrics: external.metrics.k8s.io from
#   prometheus-adapter's rules in ../prometheus-adapter/values.yaml), so an
#   HPA on crewd's backlog works too.
#
# Images are never pulled: crewd, nats-server, CoreDNS and the sandbox
# ("pause") image are built from source into scratch with Docker and
# imported into containerd (docker save | ctr images import).
#
# The node lives in a network namespace and a mount namespace of its own
# (bound to $RUN/net and $RUN/mnt): its bridge, iptables rules, ports and
# mounts never touch the host's, whose FORWARD policy Docker sets to DROP.
# Reach it with `node.sh exec CMD...` (CMD in the node's network namespace
# with KUBECONFIG set), or `eval "$(node.sh env)"`.
#
# Usage: deploy/node/node.sh up      bring it up (tools, images, daemons,
#                                    CoreDNS, a default StorageClass); waits
#                                    until the node and CoreDNS are Ready
#        deploy/node/node.sh down    stop everything it started, remove its
#                                    state, cgroups and namespaces
#        deploy/node/node.sh env     the shell lines that reach it
#        deploy/node/node.sh exec CMD...
#        deploy/node/node.sh images  rebuild and import the images
#        deploy/node/node.sh status
#        deploy/node/node.sh check   can this machine run it? (exit 0: yes)
#        deploy/node/node.sh exists  is a node up, or left behind? (exit 0: yes)
# Needs root, a Docker engine (for the images), and from Debian: containerd,
# runc, iptables, ipset, iproute2, util-linux (unshare, nsenter), etcd-server.
set -euo pipefail

NODE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DEPLOY=$(dirname "$NODE_DIR")
REPO=$(dirname "$DEPLOY")

# Where the node keeps its state (containerd's images and snapshots, etcd,
# the kubelet, the volumes) and its run-time files (namespaces, socket,
# pids). `down` removes both.
STATE=${CREW_NODE_STATE:-/var/lib/crew-node}
RUN=${CREW_NODE_RUN:-/run/crew-node}
NODE_NAME=crew-node
NODE_IP=10.200.0.1           # on a veth in the node's namespace
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
APISERVER_SERVICE_IP=10.96.0.1
DNS_SERVICE_IP=10.96.0.10
# The images node.sh builds and imports; charts name them with these tags.
CREWD_IMAGE=crewd:node
NATS_IMAGE=crew-nats:node
COREDNS_IMAGE=crew-coredns:node
PAUSE_IMAGE=crew-pause:node
METRICS_SERVER_IMAGE=crew-metrics-server:node
EXTMETRICS_IMAGE=crew-extmetrics:node
NETPROBE_IMAGE=crew-netprobe:node # ./netprobe, the network policy test's prober
PROMETHEUS_PORT=9090         # on NODE_IP

log() { printf '[node] %s\n' "$*" >&2; }
die() { printf '[node] FAIL: %s\n' "$*" >&2; exit 1; }

# in_node CMD...: CMD in the node's network and mount namespaces.
in_node() { nsenter --net="$RUN/net" --mount="$RUN/mnt" -- "$@"; }
# in_net CMD...: CMD in the node's network namespace only (it sees the
# host's files: what kubectl, helm and the tests need).
in_net() { nsenter --net="$RUN/net" -- "$@"; }

# ---- what the machine must have -----------------------------------------
# check: why this machine cannot run the node, or nothing. Every reason is
# a line; the exit status is 1 when there is one.
check() {
  local why=()
  [ "$(id -u)" = 0 ] || why+=("not root")
  for c in unshare nsenter ip iptables iptables-restore ipset containerd ctr runc docker prometheus jq yq; do
    command -v "$c" >/dev/null 2>&1 || why+=("$c is missing")
  done
  if command -v docker >/dev/null 2>&1 && ! docker info >/dev/null 2>&1; then why+=("no Docker engine answers (images are built with it)"); fi
  [ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || why+=("no cgroup memory controller")
  if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1; then
    unshare --net --mount sh -c 'ip link add crewchk0 type bridge && ip link del crewchk0' >/dev/null 2>&1 ||
      why+=("cannot make a network namespace with a bridge (unshare --net)")
  fi
  if [ ${#why[@]} -gt 0 ]; then
    printf '%s\n' "${why[@]}"
    return 1
  fi
}

# ---- tools ----------------------------------------------------------------
tools() {
  BIN=$("$DEPLOY/install-tools.sh" base etcd helm kubectl apiserver node nats-server | tail -n1)
  CNI_BIN=$(dirname "$BIN")/cni/bin
  export PATH="$BIN:$PATH"
  for t in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl helm coredns metrics-server nats-server kube-router; do
    command -v "$t" >/dev/null || die "$t is missing after install-tools.sh"
  done
  for p in bridge host-local loopback portmap; do
    [ -x "$CNI_BIN/$p" ] || die "CNI plugin $p is missing in $CNI_BIN"
  done
}

# ---- daemons --------------------------------------------------------------
# start NAME CMD...: CMD in the node's namespaces, in a session of its own,
# its output in $STATE/log/NAME.log, its pid in $RUN/NAME.pid.
start() {
  local name=$1
  shift
  setsid nsenter --net="$RUN/net" --mount="$RUN/mnt" -- \
    sh -c 'echo $$ >"$0"; exec "$@"' "$RUN/$name.pid" "$@" \
    >>"$STATE/log/$name.log" 2>&1 </dev/null &
  for _ in $(seq 50); do [ -s "$RUN/$name.pid" ] && break; sleep 0.1; done
  [ -s "$RUN/$name.pid" ] || die "$name did not start"
}

# running NAME: its process is alive.
running() {
  local pid
  pid=$(cat "$RUN/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# stop NAME [SECONDS]: SIGTERM, then SIGKILL after SECONDS (5).
stop() {
  local pid
  pid=$(cat "$RUN/$1.pid" 2>/dev/null) || return 0
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq $((${2:-5} * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/$1.pid"
}

# wait_for WHAT SECONDS CMD...: until CMD succeeds; the daemon logs' tails
# on a timeout.
wait_for() {
  local what=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  for f in "$STATE"/log/*.log; do
    printf '\n--- %s (last 15 lines)\n' "$f" >&2
    tail -n 15 "$f" >&2
  done
  die "$what: not after ${secs}s"
}

kubectl_node() { in_net kubectl --kubeconfig "$STATE/admin.kubeconfig" "$@"; }

# ---- up -------------------------------------------------------------------
namespaces() {
  mkdir -p "$RUN"
  # The files the namespaces are bound to must be on a private mount.
  if ! mountpoint -q "$RUN"; then
    mount --bind "$RUN" "$RUN"
    mount --make-private "$RUN"
  fi
  touch "$RUN/net" "$RUN/mnt"
  unshare --net="$RUN/net" --mount="$RUN/mnt" --propagation private true
  # Inside: the node's own /tmp (the host-path provisioner's volumes are
  # /tmp/hostpath_pv/*), /run/netns (the pods' network namespaces) and a
  # /var/lib/kubelet of its own (the kubelet mounts the pods' volumes there).
  mkdir -p "$STATE/tmp" "$STATE/netns" "$STATE/kubelet"
  in_node sh -c "mount --bind '$STATE/tmp' /tmp && mkdir -p /run/netns && mount --bind '$STATE/netns' /run/netns &&
    mount --make-rshared /"
  # The network: loopback, and the node's address on one end of a veth
  # pair (no dummy driver in this kernel) with the default route
  # (kube-proxy and the kubelet want one); the other end goes nowhere.
  in_net sh -c "ip link set lo up && ip link add node0 type veth peer name node0-end &&
    ip addr add $NODE_IP/24 dev node0 && ip link set node0-end up && ip link set node0 up &&
    ip route add default dev node0"
  in_net sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward; echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables;
    echo 1 >/proc/sys/net/bridge/bridge-nf-call-ip6tables' 2>/dev/null ||
    die "cannot set ip_forward and bridge-nf-call-iptables in the node's namespace (br_netfilter)"
}

pki() {
  local p=$STATE/pki
  mkdir -p "$p"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$p/ca.key" -out "$p/ca.crt" -days 30 \
    -subj "/CN=crew-node-ca" >/dev/null 2>&1
  openssl req -newkey rsa:2048 -nodes -keyout "$p/apiserver.key" -out "$p/apiserver.csr" \
    -subj "/CN=kube-apiserver" >/dev/null 2>&1
  printf 'subjectAltName=IP:%s,IP:%s,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost\n' \
    "$NODE_IP" "$APISERVER_SERVICE_IP" >"$p/apiserver.ext"
  openssl x509 -req -in "$p/apiserver.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
    -out "$p/apiserver.crt" -days 30 -extfile "$p/apiserver.ext" >/dev/null 2>&1
  # The aggregation layer (metrics-server's API): a CA of its own for the
  # apiserver's client certificate towards extension servers.
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$p/front-proxy-ca.key" -out "$p/front-proxy-ca.crt" -days 30 \
    -subj "/CN=crew-node-front-proxy-ca" >/dev/null 2>&1
  openssl req -newkey rsa:2048 -nodes -keyout "$p/front-proxy-client.key" -out "$p/front-proxy-client.csr" \
    -subj "/CN=front-proxy-client" >/dev/null 2>&1
  openssl x509 -req -in "$p/front-proxy-client.csr" -CA "$p/front-proxy-ca.crt" -CAkey "$p/front-proxy-ca.key" \
    -CAcreateserial -out "$p/front-proxy-client.crt" -days 30 >/dev/null 2>&1
  openssl genrsa -out "$p/sa.key" 2048 >/dev/null 2>&1
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" >/dev/null 2>&1
  # A token per component, each the user RBAC's bootstrap policy (and the
  # Node authorizer, for the kubelet) expects.
  : >"$p/tokens.csv"
  token admin admin system:masters
  token controller-manager system:kube-controller-manager
  token scheduler system:kube-scheduler
  token kubelet "system:node:$NODE_NAME" system:nodes
  token proxy system:kube-proxy
  token kube-router system:kube-router
}

# token NAME USER [GROUP]: a token for USER in the apiserver's token file,
# and $STATE/NAME.kubeconfig that uses it.
token() {
  local tok
  tok=$(openssl rand -hex 24)
  if [ -n "${3:-}" ]; then echo "$tok,$2,$2,$3"; else echo "$tok,$2,$2"; fi >>"$STATE/pki/tokens.csv"
  kubeconfig "$STATE/$1.kubeconfig" "$tok"
}

# kubeconfig FILE TOKEN
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: $NODE_NAME
    cluster:
      server: https://$NODE_IP:6443
      certificate-authority: $STATE/pki/ca.crt
users:
  - name: user
    user:
      token: $2
contexts:
  - name: $NODE_NAME
    context: {cluster: $NODE_NAME, user: user}
current-context: $NODE_NAME
EOF
}

containerd_config() {
  mkdir -p "$STATE/containerd" "$STATE/cni/net.d"
  cat >"$STATE/containerd/config.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$RUN/containerd"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$RUN/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/library/$PAUSE_IMAGE"
  # This machine lacks CAP_SYS_RESOURCE: runc may not lower a process's
  # oom_score_adj, so every sandbox failed to start without this.
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$STATE/cni/net.d"
EOF
  cat >"$STATE/cni/net.d/10-crew.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "crew-node",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$STATE/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF
}

kubelet_config() {
  cat >"$STATE/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
# cgroup v1 here (PID 1 is not systemd); the kubelet of this release still
# runs on it when told.
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$RUN/containerd.sock
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
clusterDomain: cluster.local
clusterDNS: [$DNS_SERVICE_IP]
resolvConf: ""
# No CAP_SYS_RESOURCE: the kubelet may not lower its own oom_score_adj.
oomScoreAdj: 0
# The imported images are all there is: never collected.
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
podLogsDir: $STATE/pod-logs
serializeImagePulls: false
EOF
  cat >"$STATE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $STATE/proxy.kubeconfig}
mode: iptables
clusterCIDR: 10.244.0.0/16
hostnameOverride: $NODE_NAME
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# The node's namespace may not change the host's conntrack table size.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

# images: crewd, nats-server, CoreDNS and the sandbox image, built into
# scratch and imported into the node's containerd.
images() {
  log "images: $CREWD_IMAGE $NATS_IMAGE $COREDNS_IMAGE $PAUSE_IMAGE $METRICS_SERVER_IMAGE $EXTMETRICS_IMAGE $NETPROBE_IMAGE"
  "$REPO/service/scripts/build-image.sh" "$CREWD_IMAGE" >/dev/null
  "$DEPLOY/compose/build-images.sh" - "$NATS_IMAGE" - >/dev/null
  local ctx
  ctx=$(mktemp -d)
  mkdir -p "$ctx/coredns" "$ctx/pause" "$ctx/metrics-server/tmp" "$ctx/extmetrics" "$ctx/netprobe"
  cp "$BIN/coredns" "$ctx/coredns/"
  cp "$BIN/metrics-server" "$ctx/metrics-server/"
  cat >"$ctx/metrics-server/Dockerfile" <<'EOF'
FROM scratch
COPY metrics-server /metrics-server
COPY --chown=65534:65534 tmp /tmp
USER 65534:65534
ENTRYPOINT ["/metrics-server"]
EOF
  cat >"$ctx/coredns/Dockerfile" <<'EOF'
FROM scratch
COPY coredns /coredns
EXPOSE 53 53/udp 9153
ENTRYPOINT ["/coredns"]
EOF
  (cd "$NODE_DIR" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$ctx/pause/pause" ./pause &&
    CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$ctx/extmetrics/extmetrics" ./extmetrics &&
    CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$ctx/netprobe/netprobe" ./netprobe)
  cat >"$ctx/netprobe/Dockerfile" <<'EOF'
FROM scratch
COPY netprobe /netprobe
USER 65534:65534
ENTRYPOINT ["/netprobe"]
EOF
  cat >"$ctx/extmetrics/Dockerfile" <<'EOF'
FROM scratch
COPY extmetrics /extmetrics
USER 65534:65534
ENTRYPOINT ["/extmetrics"]
EOF
  cat >"$ctx/pause/Dockerfile" <<'EOF'
FROM scratch
COPY pause /pause
USER 65535:65535
ENTRYPOINT ["/pause"]
EOF
  local d
  for d in coredns pause metrics-server extmetrics netprobe; do
    local tag=$COREDNS_IMAGE
    [ $d = pause ] && tag=$PAUSE_IMAGE
    [ $d = metrics-server ] && tag=$METRICS_SERVER_IMAGE
    [ $d = extmetrics ] && tag=$EXTMETRICS_IMAGE
    [ $d = netprobe ] && tag=$NETPROBE_IMAGE
    DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$ctx/$d" >/dev/null 2>&1 || docker build -q -t "$tag" "$ctx/$d" >/dev/null
  done
  rm -rf "$ctx"
  docker save "$CREWD_IMAGE" "$NATS_IMAGE" "$COREDNS_IMAGE" "$PAUSE_IMAGE" "$METRICS_SERVER_IMAGE" "$EXTMETRICS_IMAGE" "$NETPROBE_IMAGE" |
    in_node ctr --address "$RUN/containerd.sock" -n k8s.io images import - >/dev/null
}

addons() {
  kubectl_node apply -f - >/dev/null <<EOF
# The host-path provisioner of kube-controller-manager, the default class:
# a PVC without a class (the NATS StatefulSet's) binds to a directory
# under the node's /tmp/hostpath_pv.
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: hostpath
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: coredns
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:coredns
rules:
  - apiGroups: [""]
    resources: [endpoints, services, pods, namespaces]
    verbs: [list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:coredns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:coredns
subjects:
  - kind: ServiceAccount
    name: coredns
    namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: coredns
  namespace: kube-system
data:
  # Cluster names only: the node has no upstream resolver.
  Corefile: |
    .:53 {
        errors
        health {
            lameduck 5s
        }
        ready
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
            ttl 30
        }
        prometheus :9153
        cache 30
        loop
        reload
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  replicas: 1
  selector:
    matchLabels: {k8s-app: kube-dns}
  template:
    metadata:
      labels: {k8s-app: kube-dns}
    spec:
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      dnsPolicy: Default
      containers:
        - name: coredns
          image: $COREDNS_IMAGE
          imagePullPolicy: Never
          args: ["-conf", "/etc/coredns/Corefile"]
          ports:
            - {name: dns, containerPort: 53, protocol: UDP}
            - {name: dns-tcp, containerPort: 53, protocol: TCP}
            - {name: metrics, containerPort: 9153, protocol: TCP}
          resources:
            requests: {cpu: 50m, memory: 40Mi}
            limits: {memory: 170Mi}
          volumeMounts:
            - {name: config, mountPath: /etc/coredns, readOnly: true}
          livenessProbe:
            httpGet: {path: /health, port: 8080}
            periodSeconds: 10
          readinessProbe:
            httpGet: {path: /ready, port: 8181}
            periodSeconds: 2
      volumes:
        - name: config
          configMap: {name: coredns}
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  clusterIP: $DNS_SERVICE_IP
  selector: {k8s-app: kube-dns}
  ports:
    - {name: dns, port: 53, protocol: UDP}
    - {name: dns-tcp, port: 53, protocol: TCP}
    - {name: metrics, port: 9153, protocol: TCP}
EOF
  metrics_server
  extmetrics
}

# metrics_server: the resource metrics API (metrics.k8s.io) an HPA on CPU
# reads, as metrics-server's own manifests/base has it, with the node's
# image and --kubelet-insecure-tls (the kubelet's serving certificate is
# self-signed).
metrics_server() {
  kubectl_node apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:aggregated-metrics-reader
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
  - apiGroups: [metrics.k8s.io]
    resources: [pods, nodes]
    verbs: [get, list, watch]
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: metrics-server
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: metrics-server-auth-reader
  namespace: kube-system
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{kind: ServiceAccount, name: metrics-server, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: metrics-server:system:auth-delegator
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects: [{kind: ServiceAccount, name: metrics-server, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:metrics-server
rules:
  - apiGroups: [""]
    resources: [nodes/metrics]
    verbs: [get]
  - apiGroups: [""]
    resources: [pods, nodes]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:metrics-server
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:metrics-server}
subjects: [{kind: ServiceAccount, name: metrics-server, namespace: kube-system}]
---
apiVersion: v1
kind: Service
metadata:
  name: metrics-server
  namespace: kube-system
  labels: {k8s-app: metrics-server}
spec:
  selector: {k8s-app: metrics-server}
  ports:
    - {name: https, port: 443, protocol: TCP, targetPort: https, appProtocol: https}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: metrics-server
  namespace: kube-system
  labels: {k8s-app: metrics-server}
spec:
  replicas: 1
  selector:
    matchLabels: {k8s-app: metrics-server}
  template:
    metadata:
      labels: {k8s-app: metrics-server}
    spec:
      serviceAccountName: metrics-server
      priorityClassName: system-cluster-critical
      containers:
        - name: metrics-server
          image: $METRICS_SERVER_IMAGE
          imagePullPolicy: Never
          args:
            - --cert-dir=/tmp
            - --secure-port=10250
            - --kubelet-preferred-address-types=InternalIP
            - --kubelet-use-node-status-port
            - --kubelet-insecure-tls
            - --metric-resolution=15s
          ports:
            - {name: https, containerPort: 10250, protocol: TCP}
          resources:
            requests: {cpu: 50m, memory: 100Mi}
          readinessProbe:
            httpGet: {path: /readyz, port: https, scheme: HTTPS}
            periodSeconds: 5
          securityContext:
            runAsNonRoot: true
            runAsUser: 65534
            readOnlyRootFilesystem: true
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
            seccompProfile: {type: RuntimeDefault}
          volumeMounts:
            - {name: tmp, mountPath: /tmp}
      volumes:
        - {name: tmp, emptyDir: {}}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
spec:
  service: {name: metrics-server, namespace: kube-system}
  group: metrics.k8s.io
  version: v1beta1
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
EOF
}

# extmetrics: the external metrics API (external.metrics.k8s.io) an HPA
# on crewd's backlog reads, from the node's Prometheus, with the external
# rules of ../prometheus-adapter/values.yaml (name.as and metricsQuery of
# each) in a ConfigMap; the aggregation layer's client certificate
# required (the CA from kube-system/extension-apiserver-authentication).
extmetrics() {
  local rules
  rules=$(yq -c '[.rules.external[] | {name: .name.as, query: .metricsQuery}]' "$DEPLOY/prometheus-adapter/values.yaml") ||
    die "reading the external rules of deploy/prometheus-adapter/values.yaml"
  kubectl_node -n kube-system create configmap extmetrics-rules --from-literal "rules.json=$rules" \
    --dry-run=client -o yaml | kubectl_node apply -f - >/dev/null
  kubectl_node apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata:
  name: extmetrics
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: extmetrics-auth-reader
  namespace: kube-system
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{kind: ServiceAccount, name: extmetrics, namespace: kube-system}]
---
apiVersion: v1
kind: Service
metadata:
  name: extmetrics
  namespace: kube-system
  labels: {k8s-app: extmetrics}
spec:
  selector: {k8s-app: extmetrics}
  ports:
    - {name: https, port: 443, protocol: TCP, targetPort: https, appProtocol: https}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: extmetrics
  namespace: kube-system
  labels: {k8s-app: extmetrics}
spec:
  replicas: 1
  selector:
    matchLabels: {k8s-app: extmetrics}
  template:
    metadata:
      labels: {k8s-app: extmetrics}
    spec:
      serviceAccountName: extmetrics
      priorityClassName: system-cluster-critical
      containers:
        - name: extmetrics
          image: $EXTMETRICS_IMAGE
          imagePullPolicy: Never
          args: ["-prometheus", "http://$NODE_IP:$PROMETHEUS_PORT", "-rules", "/etc/extmetrics/rules.json"]
          ports:
            - {name: https, containerPort: 6443, protocol: TCP}
          resources:
            requests: {cpu: 20m, memory: 20Mi}
            limits: {memory: 64Mi}
          readinessProbe:
            httpGet: {path: /readyz, port: https, scheme: HTTPS}
            periodSeconds: 5
          securityContext:
            runAsNonRoot: true
            runAsUser: 65534
            readOnlyRootFilesystem: true
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
            seccompProfile: {type: RuntimeDefault}
          volumeMounts:
            - {name: rules, mountPath: /etc/extmetrics, readOnly: true}
      volumes:
        - name: rules
          configMap: {name: extmetrics-rules}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.external.metrics.k8s.io
spec:
  service: {name: extmetrics, namespace: kube-system}
  group: external.metrics.k8s.io
  version: v1beta1
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
EOF
}

# prometheus_config: the annotation-based kubernetes-pods job (the pods'
# prometheus.io/scrape, port and path), each series labelled with its
# namespace and pod as prometheus-adapter's rules expect; every 5 s, so an
# HPA sees a backlog within seconds. Debian's Prometheus is built without
# the Kubernetes service discovery, so the targets come from a file that
# scrape_targets rewrites every 2 s from the pods' list.
prometheus_config() {
  mkdir -p "$STATE/prometheus"
  echo '[]' >"$STATE/prometheus/pods.json"
  cat >"$STATE/prometheus/prometheus.yml" <<EOF
global:
  scrape_interval: 5s
  scrape_timeout: 4s
  evaluation_interval: 5s
scrape_configs:
  - job_name: kubernetes-pods
    file_sd_configs:
      - files: [$STATE/prometheus/pods.json]
        refresh_interval: 5s
EOF
}

# scrape_targets: every 2 s, the running pods annotated prometheus.io/scrape
# "true" as Prometheus' file_sd targets (pod IP and prometheus.io/port,
# prometheus.io/path), labelled namespace and pod; the file replaced whole.
scrape_targets() {
  local f=$STATE/prometheus/pods.json
  while :; do
    kubectl_node get pods -A -o json 2>/dev/null | jq -c '[.items[]
      | select(.metadata.annotations["prometheus.io/scrape"] == "true" and .status.phase == "Running" and (.status.podIP // "") != "")
      | {targets: ["\(.status.podIP):\(.metadata.annotations["prometheus.io/port"] // "80")"],
         labels: {namespace: .metadata.namespace, pod: .metadata.name,
                  __metrics_path__: (.metadata.annotations["prometheus.io/path"] // "/metrics")}}]' >"$f.tmp" 2>/dev/null &&
      [ -s "$f.tmp" ] && mv "$f.tmp" "$f"
    sleep 2
  done
}


# netpol: the NetworkPolicy enforcer, kube-router's firewall alone (no
# routing, no service proxy: the CNI bridge and kube-proxy do those), a
# host process in the node's namespaces like kube-proxy, with a token of
# its own allowed only what it reads. It turns every NetworkPolicy into
# iptables chains and ipsets on the FORWARD (bridged traffic too: the
# bridge hands its frames to iptables), INPUT and OUTPUT paths; traffic no
# policy allows is REJECTed (the client sees "connection refused"); the
# node's own traffic to its pods (the kubelet's probes, the tests' reads)
# is let through. Started once the node is registered (it reads its
# address from the Node), before the first pod.
netpol() {
  if [ "${NODE_NETPOL:-on}" = off ]; then
    log "NODE_NETPOL=off: no NetworkPolicy enforcer; every policy is ignored"
    return 0
  fi
  kubectl_node apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: crew-node:kube-router
rules:
  # What its informers watch (it starts them all, whichever part runs).
  - apiGroups: [""]
    resources: [pods, namespaces, nodes, services, endpoints]
    verbs: [get, list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
  - apiGroups: [networking.k8s.io]
    resources: [networkpolicies]
    verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: crew-node:kube-router
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: crew-node:kube-router}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: system:kube-router}]
EOF
  start kube-router kube-router --kubeconfig "$STATE/kube-router.kubeconfig" --hostname-override "$NODE_NAME" \
    --run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
    --service-cluster-ip-range "$SERVICE_CIDR" --health-port 20244 --metrics-port 0 --v 1
  wait_for "kube-router's firewall (NetworkPolicies enforced)" 60 in_net sh -c \
    'curl -fsS http://127.0.0.1:20244/healthz && iptables -S KUBE-ROUTER-FORWARD'
}

# hostpath_modes: the host-path provisioner makes each volume's directory
# 0750 root, and a hostPath volume ignores fsGroup, so a pod that runs as a
# user of its own (the NATS servers, 65532) could not write to its PVC.
# Cloud disks and CSI volumes honour fsGroup; this loop stands in for that
# by opening each new directory to every user.
hostpath_modes() {
  local dir=$STATE/tmp/hostpath_pv
  while :; do
    if [ -d "$dir" ]; then find "$dir" -mindepth 1 -maxdepth 1 -type d ! -perm -0777 -exec chmod 0777 {} + 2>/dev/null || true; fi
    sleep 0.2
  done
}

up() {
  local t0=$SECONDS why
  if why=$(check); then :; else die "this machine cannot run the node: $(tr '\n' ';' <<<"$why")"; fi
  if [ -e "$RUN/mnt" ] || [ -e "$STATE" ]; then die "a node is already up (or was not torn down): deploy/node/node.sh down"; fi
  tools
  log "tools ready ($((SECONDS - t0))s)"
  mkdir -p "$STATE/log" "$RUN"
  namespaces
  pki
  containerd_config
  kubelet_config

  start etcd etcd --name "$NODE_NAME" --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$NODE_NAME=http://127.0.0.1:2380" --logger zap --log-level warn
  wait_for "etcd" 30 in_net curl -fsS http://127.0.0.1:2379/health

  start kube-apiserver kube-apiserver \
    --etcd-servers http://127.0.0.1:2379 \
    --advertise-address "$NODE_IP" --secure-port 6443 \
    --tls-cert-file "$STATE/pki/apiserver.crt" --tls-private-key-file "$STATE/pki/apiserver.key" \
    --client-ca-file "$STATE/pki/ca.crt" \
    --token-auth-file "$STATE/pki/tokens.csv" --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$STATE/pki/sa.pub" --service-account-signing-key-file "$STATE/pki/sa.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --kubelet-preferred-address-types InternalIP \
    --requestheader-client-ca-file "$STATE/pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$STATE/pki/front-proxy-client.crt" --proxy-client-key-file "$STATE/pki/front-proxy-client.key" \
    --enable-aggregator-routing \
    --cert-dir "$STATE/pki/apiserver"
  wait_for "kube-apiserver ready" 120 kubectl_node get --raw /readyz

  start kube-controller-manager kube-controller-manager \
    --kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --use-service-account-credentials \
    --service-account-private-key-file "$STATE/pki/sa.key" --root-ca-file "$STATE/pki/ca.crt" \
    --cluster-signing-cert-file "$STATE/pki/ca.crt" --cluster-signing-key-file "$STATE/pki/ca.key" \
    --enable-hostpath-provisioner --leader-elect=false \
    --bind-address 127.0.0.1 --cert-dir "$STATE/pki/controller-manager"
  start kube-scheduler kube-scheduler \
    --kubeconfig "$STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig "$STATE/scheduler.kubeconfig" \
    --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --cert-dir "$STATE/pki/scheduler"

  start containerd containerd --config "$STATE/containerd/config.toml"
  wait_for "containerd" 30 in_node ctr --address "$RUN/containerd.sock" version
  images
  log "images imported ($((SECONDS - t0))s)"

  start kubelet kubelet --config "$STATE/kubelet-config.yaml" --kubeconfig "$STATE/kubelet.kubeconfig" \
    --root-dir "$STATE/kubelet" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" \
    --pod-infra-container-image "docker.io/library/$PAUSE_IMAGE" --v 1
  start kube-proxy kube-proxy --config "$STATE/kube-proxy.yaml"
  prometheus_config
  start prometheus prometheus --config.file "$STATE/prometheus/prometheus.yml" \
    --storage.tsdb.path "$STATE/prometheus/data" --storage.tsdb.retention.time 6h \
    --web.listen-address "$NODE_IP:$PROMETHEUS_PORT" --log.level warn
  hostpath_modes >/dev/null 2>&1 </dev/null &
  echo $! >"$RUN/hostpath-modes.pid"
  scrape_targets >/dev/null 2>&1 </dev/null &
  echo $! >"$RUN/scrape-targets.pid"

  wait_for "node $NODE_NAME Ready" 120 kubectl_node wait --for condition=Ready "node/$NODE_NAME" --timeout 1s
  netpol
  log "NetworkPolicy enforcer: $(if running kube-router; then echo "kube-router's firewall, up after $((SECONDS - t0))s"; else echo none; fi)"
  addons
  wait_for "CoreDNS Ready" 120 kubectl_node -n kube-system wait --for condition=Available deployment/coredns --timeout 1s
  wait_for "the metrics API (metrics-server)" 120 kubectl_node wait --for condition=Available apiservice/v1beta1.metrics.k8s.io --timeout 1s
  wait_for "Prometheus ready" 60 in_net curl -fsS "http://$NODE_IP:$PROMETHEUS_PORT/-/ready"
  wait_for "the external metrics API (extmetrics)" 120 kubectl_node wait --for condition=Available apiservice/v1beta1.external.metrics.k8s.io --timeout 1s
  log "up in $((SECONDS - t0))s: $(kubectl_node get node "$NODE_NAME" -o jsonpath='{.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}')"
  log "reach it with: deploy/node/node.sh exec kubectl get pods -A   (or: eval \"\$(deploy/node/node.sh env)\")"
}

# ---- down -----------------------------------------------------------------
down() {
  [ "$(id -u)" = 0 ] || die "not root"
  if [ -S "$RUN/containerd.sock" ] && [ -e "$RUN/mnt" ]; then
    # The kubelet first, so that it restarts nothing; then every container
    # and sandbox, through containerd.
    stop kubelet 10
    local ctr_=(in_node ctr --address "$RUN/containerd.sock" -n k8s.io) id
    for id in $("${ctr_[@]}" tasks ls -q 2>/dev/null); do "${ctr_[@]}" tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    for _ in $(seq 50); do
      [ -z "$("${ctr_[@]}" tasks ls 2>/dev/null | awk 'NR > 1 && $3 != "STOPPED"')" ] && break
      sleep 0.1
    done
    for id in $("${ctr_[@]}" tasks ls -q 2>/dev/null); do "${ctr_[@]}" tasks delete -f "$id" >/dev/null 2>&1 || true; done
    for id in $("${ctr_[@]}" containers ls -q 2>/dev/null); do "${ctr_[@]}" containers delete "$id" >/dev/null 2>&1 || true; done
  fi
  local n
  for n in hostpath-modes scrape-targets prometheus kubelet kube-router kube-proxy kube-scheduler kube-controller-manager kube-apiserver containerd etcd; do stop "$n"; done
  # The kubelet's cgroups (cgroupfs driver: /kubepods in each hierarchy).
  local d
  for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  if [ -e "$RUN/mnt" ]; then umount "$RUN/mnt" 2>/dev/null || true; fi
  if [ -e "$RUN/net" ]; then umount "$RUN/net" 2>/dev/null || true; fi
  if mountpoint -q "$RUN" 2>/dev/null; then umount "$RUN" || true; fi
  rm -rf "$RUN" "$STATE"
  log "down"
}

env_lines() {
  cat <<EOF
export KUBECONFIG=$STATE/admin.kubeconfig
# kubectl and helm must run in the node's network namespace:
alias kubectl='nsenter --net=$RUN/net kubectl'
alias helm='nsenter --net=$RUN/net helm'
EOF
}

status() {
  local n
  for n in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy kube-router prometheus scrape-targets hostpath-modes; do
    if running "$n"; then printf '%-24s running (pid %s)\n' "$n" "$(cat "$RUN/$n.pid")"; else printf '%-24s not running\n' "$n"; fi
  done
  [ -f "$STATE/admin.kubeconfig" ] && kubectl_node get nodes,pods -A -o wide 2>&1 || true
}

case ${1:-} in
  up) up ;;
  down) down ;;
  env) env_lines ;;
  exec)
    shift
    [ $# -gt 0 ] || die "exec: which command?"
    BIN=$("$DEPLOY/install-tools.sh" helm kubectl | tail -n1)
    PATH="$BIN:$PATH" KUBECONFIG=$STATE/admin.kubeconfig in_net "$@"
    ;;
  images) tools; images ;;
  status) status ;;
  check) check ;;
  exists) [ -e "$RUN/mnt" ] || [ -e "$STATE" ] ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac

// Package node proves the chart on a real Kubernetes node (node.sh's):
// TestNode installs deploy/helm/crewd with its bundled three-server NATS
// cluster, requires every pod Ready, every partition's jobs stream and
// records' bucket at R3 with their followers current, and a job posted
// through the crewd Service to run; then, under a steady load of jobs
// through the Service, it brings the faults a cluster brings one after the
// other: a crewd pod deleted, a rollout restart, a scale 3 -> 1 -> 3, a
// drain of the node's crewd pods through the PodDisruptionBudget (eviction
// API), and the pod of the NATS server leading the most partitions'
// groups deleted. Every job answered 202 must end succeeded, and no crewd
// replica the fault did not touch (read and posted jobs by its pod's
// address) may go more than 5 s without answering a read or refuse a job;
// through the NATS pod's deletion, not more than a second without
// answering a read or accepting a job. A deleted crewd pod's crewd must
// exit 0 at least 3 s before its grace period ends (when the kubelet
// would SIGKILL it; as the kubelet reports the exit), also when its jobs
// outlast its shutdown timeout and its traces' final flush waits on a
// collector that never answers (the test runs one). Before the faults it
// proves the chart's NetworkPolicies enforced (node.sh runs kube-router's
// firewall): from a pod without crewd's labels NATS's client and route
// ports and crewd's admin port refused, crewd's API answering 401; from a
// crewd pod NATS's client port answering (checkPolicies, every attempt
// logged with its answer). TestNodeNetworkPolicy is that check alone.
//
// TestNodeKustomize does the same with the kustomize prod overlay
// (kubectl apply -k), less the rollout, scale and drain, which move the
// same Deployment and PodDisruptionBudget; it checks the base's
// NetworkPolicies the same way. TestNodeHPA (NODE_HPA=1 as
// well) moves the chart's HPA on CPU up and down under load;
// TestNodeBacklog (NODE_BACKLOG=1) moves it on crewd's backlog, the
// External metric served by ./extmetrics from the node's Prometheus.
//
// It runs only with CREW_NODE_TEST=1, in the node's network namespace with
// KUBECONFIG set (deploy/node/node-test.sh does both); otherwise it skips.
// The package has no code of its own but for the pause command (./pause),
// the node's sandbox image, ./extmetrics and ./netprobe (the policy
// check's prober).
package node

# The references check. Input: every object of one render (jq -s over
# yq -c). Neither the apiserver nor kube-score follows a port by name, so a
# typo there deploys cleanly and fails at run time. Checked against the
# render's workloads (objects with a pod template):
#   - a Service's targetPort, and a probe's port: a port of the pod's
#     containers (by name or number);
#   - a NetworkPolicy's ports: a container port, by name or number;
#   - a ServiceMonitor endpoint's port: a port name of a Service;
#     a PodMonitor endpoint's port: a container port name;
#   - a prometheus.io/port annotation: a container port number;
#   - an HPA's or ScaledObject's scaleTargetRef: a workload of the render.
# Output: one line per reference, "ok ..." or "FAIL ...".

def workloads: map(select((.spec.template.spec.containers? | type) == "array"));
def containerPorts($w): [$w[] | .spec.template.spec.containers[] | (.ports // [])[]];
def resolves($ports): . as $p
  | if ($p | type) == "string" then any($ports[]; .name == $p)
    else any($ports[]; .containerPort == $p) end;
def line($ok; $what): if $ok then "ok \($what)" else "FAIL \($what): does not resolve" end;

. as $all
| workloads as $w
| containerPorts($w) as $cp
| [ $all[] | select(.kind == "Service") | .spec.ports[] | .name ] as $svcPortNames
| ( $all[] | select(.kind == "Service") | .metadata.name as $n | .spec.ports[]
    | (.targetPort // .port) as $t
    | line($t | resolves($cp); "Service/\($n) port \(.name // .port) -> targetPort \($t)") ),
  ( $w[] | .metadata.name as $n | .spec.template.spec.containers[] | .name as $c | . as $ctr
    | ("startupProbe", "livenessProbe", "readinessProbe") as $k | $ctr[$k] // empty
    | (.httpGet // .tcpSocket // .grpc).port as $p
    | line($p | resolves($cp); "\($n)/\($c) \($k) port \($p)") ),
  ( $all[] | select(.kind == "NetworkPolicy") | .metadata.name as $n | (.spec.ingress // [])[] | (.ports // [])[]
    | line(.port | resolves($cp); "NetworkPolicy/\($n) ingress port \(.port)") ),
  ( $all[] | select(.kind == "ServiceMonitor") | .metadata.name as $n | .spec.endpoints[]
    | line(.port as $p | $svcPortNames | index($p) != null; "ServiceMonitor/\($n) port \(.port)") ),
  ( $all[] | select(.kind == "PodMonitor") | .metadata.name as $n | .spec.podMetricsEndpoints[]
    | line(.port | resolves($cp); "PodMonitor/\($n) port \(.port)") ),
  ( $w[] | .metadata.name as $n | .spec.template.metadata.annotations["prometheus.io/port"] // empty
    | line(tonumber | resolves($cp); "\($n) annotation prometheus.io/port \(.)") ),
  ( $all[] | select(.kind == "HorizontalPodAutoscaler" or .kind == "ScaledObject") | "\(.kind)/\(.metadata.name)" as $n
    | .spec.scaleTargetRef as $t
    | line(any($w[]; .kind == ($t.kind // "Deployment") and .metadata.name == $t.name); "\($n) scaleTargetRef \($t.kind // "Deployment")/\($t.name)") )

# The trace-egress check. Input: every rendered object (jq -s over yq -c).
# For each container that sends traces (OTEL_EXPORTER_OTLP_ENDPOINT or
# OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set) in a pod that a NetworkPolicy
# restricts on egress, some egress rule must allow TCP to the endpoint's
# port (the URL's, else 80 or 443), and, when the endpoint is a host name,
# some rule must allow port 53: otherwise the policy silently drops every
# span. Output: one line per such container, "ok ..." or "FAIL ...".

def matches($labels): (.spec.podSelector.matchLabels // {}) | to_entries | all(. as $e | $labels[$e.key] == $e.value);

def allows($port; $proto):
  any(.[]; (.ports // null) == null or any(.ports[]; (.port == $port or .port == ($port | tostring)) and ((.protocol // "TCP") == $proto)));

. as $all
| [ $all[] | select(.kind == "NetworkPolicy" and ((.spec.policyTypes // []) | index("Egress"))) ] as $policies
| $all[]
| select(.spec.template.spec.containers != null)
| . as $w
| ($w.spec.template.metadata.labels // {}) as $labels
| $w.spec.template.spec.containers[]
| . as $c
| ([ ($c.env // [])[] | select(.name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" or .name == "OTEL_EXPORTER_OTLP_ENDPOINT") | .value ] | first) as $endpoint
| select($endpoint != null and $endpoint != "")
| ($endpoint | capture("^(?<scheme>https?)://(?<host>[^/:]+)(:(?<port>[0-9]+))?")) as $u
| (if $u.port then ($u.port | tonumber) elif $u.scheme == "https" then 443 else 80 end) as $port
| ($u.host | test("^[0-9.]+$") | not) as $named
| [ $policies[] | select(matches($labels)) ] as $mine
| if ($mine | length) == 0 then "ok \($w.kind)/\($w.metadata.name) \($c.name): traces to \($endpoint), no egress policy"
  else ([ $mine[] | .spec.egress // [] ] | add) as $rules
  | if ($rules | allows($port; "TCP")) | not then
      "FAIL \($w.kind)/\($w.metadata.name) \($c.name): traces to \($endpoint) but no NetworkPolicy egress rule allows TCP \($port)"
    elif $named and (($rules | allows(53; "UDP")) | not) then
      "FAIL \($w.kind)/\($w.metadata.name) \($c.name): traces to \($endpoint) but no NetworkPolicy egress rule allows DNS"
    else "ok \($w.kind)/\($w.metadata.name) \($c.name): traces to \($endpoint), egress allows TCP \($port)\(if $named then " and DNS" else "" end)" end
  end

# The grace-period check. Input: every rendered object (jq -s over yq -c).
# For each workload with a pod template and each container, crewd's stop
# deadline (-shutdown-timeout flag, else CREW_SHUTDOWN_TIMEOUT, else crewd's
# default 25s) and delay (-shutdown-delay, CREW_SHUTDOWN_DELAY, 5s) must
# both be shorter than terminationGracePeriodSeconds (Kubernetes' default
# 30 when unset): otherwise the kubelet SIGKILLs crewd mid-stop. With
# traces on (OTEL_EXPORTER_OTLP_ENDPOINT or ..._TRACES_ENDPOINT, and not
# OTEL_SDK_DISABLED=true), crewd flushes the last spans after its stop for
# up to flushBound: the grace period must then exceed the timeout by more.
# Output: one line per container, "ok ..." or "FAIL ...".

include "duration";

# The value crewd would use for setting `flag`/`env`: a flag in args wins
# (-flag=v, --flag=v, or -flag v), then the env var, then the default.
def setting($c; $flag; $env; $default):
  ($c.args // []) as $args
  | ([ range(0; $args | length) as $i
       | $args[$i] as $a
       | if ($a | test("^--?" + $flag + "=")) then ($a | sub("^--?" + $flag + "="; ""))
         elif ($a | test("^--?" + $flag + "$")) then $args[$i + 1]
         else empty end ] | last) as $fromFlag
  | ([ ($c.env // [])[] | select(.name == $env) ] | last) as $e
  | if $fromFlag != null then {value: $fromFlag, from: "-\($flag)"}
    elif $e == null then {value: $default, from: "default"}
    elif ($e | has("value")) then {value: $e.value, from: $env}
    else {value: null, from: "\($env) (valueFrom: cannot be checked)"} end;

# crewd's bound on the traces' final flush, after the stop (seconds).
def flushBound: 5;

# Whether crewd in container c sends traces (literal env values only).
def tracing($c):
  [ ($c.env // [])[] | select(.value != null) | {(.name): .value} ] | add // {}
  | ((.OTEL_EXPORTER_OTLP_ENDPOINT // .OTEL_EXPORTER_OTLP_TRACES_ENDPOINT // "") != "")
    and ((.OTEL_SDK_DISABLED // "" | ascii_downcase) != "true")
    and ((.OTEL_TRACES_EXPORTER // "" | ascii_downcase) != "none");

.[]
| select(type == "object" and (.spec.template.spec.containers? | type) == "array")
| . as $o
| (.spec.template.spec.terminationGracePeriodSeconds // 30) as $grace
| .spec.template.spec.containers[]
| select(((.env // []) | map(.name) | any(startswith("CREW_"))) or (.image // "" | test("(^|/)crewd([:@]|$)")))
| setting(.; "shutdown-timeout"; "CREW_SHUTDOWN_TIMEOUT"; "25s") as $t
| setting(.; "shutdown-delay"; "CREW_SHUTDOWN_DELAY"; "5s") as $d
| (if tracing(.) then flushBound else 0 end) as $flush
| "\($o.kind)/\($o.metadata.name) container \(.name): terminationGracePeriodSeconds \($grace), shutdown timeout \($t.value) (\($t.from)), delay \($d.value) (\($d.from))\(if $flush > 0 then ", traces on (final flush up to \($flush) s after the stop)" else "" end)" as $what
| if $t.value == null or $d.value == null then "FAIL \($what): not a literal value"
  else (try ([($t.value | seconds), ($d.value | seconds)]) catch null) as $s
  | if $s == null then "FAIL \($what): not a Go duration"
    elif ($grace > $s[0] + $flush) and ($grace > $s[1]) then "ok \($what)"
    elif $flush > 0 and ($grace > $s[0]) then "FAIL \($what): the grace period must be larger than the timeout + \($flush) s"
    else "FAIL \($what): the grace period must be larger than both" end
  end

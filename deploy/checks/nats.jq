# The NATS stop check. Input: every rendered object (jq -s over yq -c).
# For each ConfigMap with a nats.conf and each StatefulSet that mounts it:
# nats-server spends at most lame_duck_duration (default 2m, the minimum it
# accepts 30s; its lame_duck_grace_period, default 10s, is part of it and
# must be shorter) moving clients and stream leaders away, and then stops
# JetStream, so terminationGracePeriodSeconds (default 30) must be larger
# than lame_duck_duration by a margin of 10 s; otherwise the kubelet
# SIGKILLs a server mid-way. And nats-server enters lame duck mode only on
# SIGUSR2 (`nats-server --signal ldm=<pid>`): on SIGTERM it stops at once,
# so the container needs a preStop hook that signals it. (nats-server -t
# checks the file's syntax and the 30 s minimum; it does not compare the
# two settings, nor see the pod.)
# Output: one line per StatefulSet, "ok ..." or "FAIL ...".
include "duration";

# The value of a top-level `key: value` (or `key = value`) line, quotes
# removed, or null.
def conf($key):
  [ split("\n")[]
    | capture("^\\s*" + $key + "\\s*[:=]\\s*\"?(?<v>[^\"\\s#]+)\"?") | .v ] | last;

[ .[] | select(type == "object" and .kind == "ConfigMap" and (.data["nats.conf"]? | type) == "string") ] as $cms
| .[]
| select(type == "object" and .kind == "StatefulSet")
| . as $o
| [ .spec.template.spec.volumes[]? | .configMap.name // empty ] as $mounted
| $cms[] | select(.metadata.name as $n | $mounted | index($n))
| .data["nats.conf"] as $c
| ($o.spec.template.spec.terminationGracePeriodSeconds // 30) as $grace
| ($c | conf("lame_duck_duration") // "2m") as $dur
| ($c | conf("lame_duck_grace_period") // "10s") as $gp
| ([ $o.spec.template.spec.containers[] | .lifecycle.preStop.exec.command // [] | join(" ")
     | select(test("(--signal|-sl)[ =]ldm")) ] | first // null) as $hook
| ($hook != null) as $ldm
| "StatefulSet/\($o.metadata.name) with ConfigMap/\(.metadata.name): terminationGracePeriodSeconds \($grace), lame_duck_duration \($dur), lame_duck_grace_period \($gp), preStop \($hook // "none")" as $what
| (try ([($dur | seconds), ($gp | seconds)]) catch null) as $s
| if $s == null then "FAIL \($what): not a Go duration"
  elif $s[1] >= $s[0] then "FAIL \($what): the grace period must be shorter than the duration (nats-server refuses to start)"
  elif $grace < $s[0] + 10 then "FAIL \($what): the pod's grace period must exceed lame_duck_duration by 10 s"
  elif ($ldm | not) then "FAIL \($what): no preStop hook starts lame duck mode (nats-server --signal ldm=1): SIGTERM alone stops the server at once"
  else "ok \($what)" end

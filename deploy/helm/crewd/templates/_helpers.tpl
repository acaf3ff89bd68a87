{{/* Names and labels, in the usual Helm shape. */}}
{{- define "crewd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "crewd.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "crewd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "crewd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "crewd.labels" -}}
{{ include "crewd.selectorLabels" . }}
app.kubernetes.io/part-of: crew
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "crewd.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "crewd.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
crewd.natsMode: where the jobs go. "bundled" (the StatefulSet of
templates/nats.yaml), "external" (crewd.nats.url), "embedded" (a server in
each pod), or "off" (memory).
*/}}
{{- define "crewd.natsMode" -}}
{{- $url := .Values.crewd.nats.url }}
{{- if eq $url "off" }}off
{{- else if $url }}external
{{- else if .Values.nats.enabled }}bundled
{{- else }}embedded
{{- end }}
{{- end }}

{{- define "crewd.natsName" -}}
{{- printf "%s-nats" (include "crewd.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "crewd.natsSelectorLabels" -}}
app.kubernetes.io/name: nats
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "crewd.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (toString .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
crewd.seconds: a Go duration ("25s", "1m30s", "500ms") as seconds, a float
in a string. Fails on anything time.ParseDuration would refuse (or a
negative one, which crewd refuses).
*/}}
{{- define "crewd.seconds" -}}
{{- $d := toString .value }}
{{- if not (regexMatch "^([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$|^0$" $d) }}
{{- fail (printf "%s = %q is not a Go duration such as \"25s\" or \"1m30s\"" .name $d) }}
{{- end }}
{{- $units := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 }}
{{- $total := 0.0 }}
{{- range regexFindAll "[0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h)" $d -1 }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]*)?" . }}
{{- $unit := trimPrefix $num . }}
{{- $total = addf $total (mulf (float64 $num) (get $units $unit)) }}
{{- end }}
{{- $total }}
{{- end }}

{{/*
crewd.validate: refuses values that would deploy something broken. Called
from the Deployment, so every render runs it.
*/}}
{{- define "crewd.validate" -}}
{{- $a := .Values.autoscaling }}
{{- if and .Values.crewd.auth.existingSecret .Values.crewd.auth.insecureNoAuth }}
{{- fail "crewd.auth.existingSecret with crewd.auth.insecureNoAuth: the API either asks for the Secret's tokens or serves everyone. Choose one." }}
{{- end }}
{{- if and $a.hpa.enabled $a.keda.enabled }}
{{- fail "autoscaling.hpa.enabled and autoscaling.keda.enabled are both true: KEDA creates and owns its own HPA for the Deployment, and two autoscalers would fight over the replica count. Enable one of them." }}
{{- end }}
{{- if and .Values.monitoring.serviceMonitor.enabled .Values.monitoring.podMonitor.enabled }}
{{- fail "monitoring.serviceMonitor.enabled and monitoring.podMonitor.enabled are both true: every pod would be scraped twice and every sum (the KEDA query, the dashboard) doubled. Enable one of them." }}
{{- end }}
{{- $n := .Values.crewd.nats }}
{{- $mode := include "crewd.natsMode" . }}
{{- if and $n.queues (eq $mode "off") }}
{{- fail "crewd.nats.queues with crewd.nats.url \"off\": named queues live in the JetStream store; jobs in memory have the default queue only." }}
{{- end }}
{{- if eq $mode "embedded" }}
{{- if or $a.hpa.enabled $a.keda.enabled }}
{{- fail "nats.enabled is false and crewd.nats.url is empty (the embedded NATS server, one per pod) with an autoscaler: a scale-down deletes a pod with the jobs still queued in its store, and a GET reaches the pod that holds a job only by chance. Use the bundled cluster (nats.enabled=true), an existing NATS (crewd.nats.url), or one replica without autoscaling.hpa/keda." }}
{{- end }}
{{- if gt (int .Values.replicaCount) 1 }}
{{- fail (printf "replicaCount is %d with the embedded NATS server (nats.enabled=false, crewd.nats.url empty): each pod would keep its own jobs, lost with the pod. Use the bundled cluster (nats.enabled=true), an existing NATS (crewd.nats.url), or replicaCount 1." (int .Values.replicaCount)) }}
{{- end }}
{{- end }}
{{- if and (has $mode (list "bundled" "external")) (lt (int $n.replicas) 3) (not $n.allowFewerReplicas) }}
{{- fail (printf "crewd.nats.replicas is %d on a shared NATS: the jobs stream and the records bucket would be lost with one server's disk, and the 202 with them. Use 3 (or 5), or set crewd.nats.allowFewerReplicas=true for a test cluster." (int $n.replicas)) }}
{{- end }}
{{- if or (lt (int $n.replicas) 1) (gt (int $n.replicas) 5) }}
{{- fail (printf "crewd.nats.replicas = %d: want 1 to 5 (crewd refuses other values)" (int $n.replicas)) }}
{{- end }}
{{- if or (lt (int $n.partitions) 1) (gt (int $n.partitions) 256) }}
{{- fail (printf "crewd.nats.partitions = %d: want 1 to 256 (crewd refuses other values)" (int $n.partitions)) }}
{{- end }}
{{- if and (eq $mode "bundled") (not (has (int .Values.nats.replicas) (list 3 5))) }}
{{- fail (printf "nats.replicas = %d: want 3 or 5 (a quorum of a JetStream cluster)" (int .Values.nats.replicas)) }}
{{- end }}
{{- if and (eq $mode "bundled") (gt (int $n.replicas) (int .Values.nats.replicas)) }}
{{- fail (printf "crewd.nats.replicas is %d but the bundled cluster has %d servers (nats.replicas): JetStream cannot place the stream." (int $n.replicas) (int .Values.nats.replicas)) }}
{{- end }}
{{- if and $n.credentialsSecret (ne $mode "external") }}
{{- fail "crewd.nats.credentialsSecret is for an existing NATS (crewd.nats.url): the bundled cluster and the embedded server need none." }}
{{- end }}
{{- if and (eq $mode "external") .Values.networkPolicy.enabled (not .Values.networkPolicy.egress) }}
{{- fail (printf "crewd.nats.url is %q but networkPolicy.egress is empty: the NetworkPolicy would deny crewd every connection, to NATS and to DNS. Add egress rules for both (see values-prod.yaml), or disable networkPolicy." $n.url) }}
{{- end }}
{{- range $k := list "stream" "consumer" "bucket" }}
{{- if not (regexMatch "^[A-Za-z0-9_-]{1,64}$" (toString (get $n $k))) }}
{{- fail (printf "crewd.nats.%s = %q: want 1 to 64 letters, digits, - and _ (crewd refuses other names)" $k (toString (get $n $k))) }}
{{- end }}
{{- end }}
{{- if lt (include "crewd.seconds" (dict "name" "crewd.nats.ackWait" "value" $n.ackWait) | float64) 1.0 }}
{{- fail (printf "crewd.nats.ackWait = %q: want at least 1s (crewd refuses less)" (toString $n.ackWait)) }}
{{- end }}
{{- if and $a.keda.enabled $a.keda.natsJetStream.enabled }}
{{- if not (has $mode (list "bundled" "external")) }}
{{- fail "autoscaling.keda.natsJetStream.enabled needs a shared NATS (the bundled cluster or crewd.nats.url): with the embedded NATS server each pod's jobs are in the pod itself, where KEDA cannot read a lag, and a pod scaled to zero takes its jobs with it." }}
{{- end }}
{{- if and (eq $mode "external") (not $a.keda.natsJetStream.natsServerMonitoringEndpoint) }}
{{- fail "autoscaling.keda.natsJetStream.natsServerMonitoringEndpoint is empty with crewd.nats.url: say where KEDA reads your NATS's monitoring port (host:8222)." }}
{{- end }}
{{- if or (ne $a.keda.natsJetStream.stream $n.stream) (ne $a.keda.natsJetStream.consumer $n.consumer) }}
{{- fail (printf "autoscaling.keda.natsJetStream reads stream %q, consumer %q, but crewd pulls from %q, %q (crewd.nats.stream, crewd.nats.consumer): KEDA would scale on another consumer's lag." $a.keda.natsJetStream.stream $a.keda.natsJetStream.consumer $n.stream $n.consumer) }}
{{- end }}
{{- end }}
{{- if $a.keda.enabled }}
{{- if not (or $a.keda.prometheus.enabled $a.keda.natsJetStream.enabled) }}
{{- fail "autoscaling.keda.enabled needs a trigger: autoscaling.keda.prometheus.enabled or autoscaling.keda.natsJetStream.enabled." }}
{{- end }}
{{- $min := $a.keda.minReplicas | toString | default ($a.minReplicas | toString) | int }}
{{- if and (eq $min 0) (not $a.keda.natsJetStream.enabled) }}
{{- fail "autoscaling.keda.minReplicas is 0 without autoscaling.keda.natsJetStream.enabled: crewd's pool metrics (crew_queue_length, crew_submitters_waiting) vanish with the last pod, so the prometheus trigger could never scale the Deployment up again from zero." }}
{{- end }}
{{- end }}
{{- if not (has .Values.crewd.shutdownMode (list "drain-then-hard" "drain" "soft" "soft-then-hard" "hard")) }}
{{- fail (printf "crewd.shutdownMode = %q: one of drain-then-hard, drain, soft, soft-then-hard, hard" .Values.crewd.shutdownMode) }}
{{- end }}
{{- $timeout := include "crewd.seconds" (dict "name" "crewd.shutdownTimeout" "value" .Values.crewd.shutdownTimeout) | float64 }}
{{- $delay := include "crewd.seconds" (dict "name" "crewd.shutdownDelay" "value" .Values.crewd.shutdownDelay) | float64 }}
{{- $grace := .Values.terminationGracePeriodSeconds | float64 }}
{{- if not (gt $grace $timeout) }}
{{- fail (printf "terminationGracePeriodSeconds (%v) must be larger than crewd.shutdownTimeout (%s): the kubelet would SIGKILL crewd before its own deadline, losing what its pool holds." .Values.terminationGracePeriodSeconds .Values.crewd.shutdownTimeout) }}
{{- end }}
{{- if and .Values.crewd.tracing.endpoint (not (gt $grace (addf $timeout 5))) }}
{{- fail (printf "terminationGracePeriodSeconds (%v) must be larger than crewd.shutdownTimeout (%s) + 5s with crewd.tracing.endpoint set: after its stop crewd flushes the last spans for up to 5 s, and a collector that does not answer would keep it until the kubelet's SIGKILL." .Values.terminationGracePeriodSeconds .Values.crewd.shutdownTimeout) }}
{{- end }}
{{- if not (gt $grace $delay) }}
{{- fail (printf "terminationGracePeriodSeconds (%v) must be larger than crewd.shutdownDelay (%s)." .Values.terminationGracePeriodSeconds .Values.crewd.shutdownDelay) }}
{{- end }}
{{- if not (gt $timeout $delay) }}
{{- fail (printf "crewd.shutdownTimeout (%s) must be longer than crewd.shutdownDelay (%s), which it includes (crewd refuses to start otherwise)." .Values.crewd.shutdownTimeout .Values.crewd.shutdownDelay) }}
{{- end }}
{{- if not (has .Values.crewd.logLevel (list "debug" "info" "warn" "error")) }}
{{- fail (printf "crewd.logLevel = %q: one of debug, info, warn, error" .Values.crewd.logLevel) }}
{{- end }}
{{- end }}

{{/*
The backlog query KEDA's prometheus trigger reads: what waits anywhere, the
pool's queue and blocked submitters over every pod plus the jobs waiting in
the stream (the consumer's pending and ack-pending, natsjs_consumer_lag),
taken once per stream: every pod reports the same lag. With partitions,
a pod's natsjs_consumer_lag{consumer} is every partition's lanes summed,
labelled with partition 0's stream: one series a queue, still counted once.
*/}}
{{- define "crewd.backlogQuery" -}}
{{- if .Values.autoscaling.keda.prometheus.query }}
{{- .Values.autoscaling.keda.prometheus.query }}
{{- else }}
{{- $ns := printf "namespace=%q" .Release.Namespace }}
{{- $sel := printf "%s,pool=\"crewd\"" $ns }}
{{- printf "sum(crew_queue_length{%s}) + sum(crew_submitters_waiting{%s}) + (sum(max by (stream, consumer) (natsjs_consumer_lag{%s,consumer=%q})) or vector(0))" $sel $sel $ns .Values.crewd.nats.consumer }}
{{- end }}
{{- end }}

{{/* Where KEDA's nats-jetstream trigger reads the lag. */}}
{{- define "crewd.natsMonitoringEndpoint" -}}
{{- .Values.autoscaling.keda.natsJetStream.natsServerMonitoringEndpoint | default (printf "%s-headless.%s.svc.cluster.local:8222" (include "crewd.natsName" .) .Release.Namespace) }}
{{- end }}

{{/* The Secret of the API's tokens: the user's, or the chart's. "" with insecureNoAuth. */}}
{{- define "crewd.authSecret" -}}
{{- if not .Values.crewd.auth.insecureNoAuth -}}
{{- .Values.crewd.auth.existingSecret | default (printf "%s-api-tokens" (include "crewd.fullname" .) | trunc 63 | trimSuffix "-") -}}
{{- end -}}
{{- end }}

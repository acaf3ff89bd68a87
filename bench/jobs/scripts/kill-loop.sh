#!/usr/bin/env bash
# kill-loop.sh: jobsbench's kill test of crewd, again and again, with the
# kill's moment, the jobs' length and GOMAXPROCS varied, to find a job
# accepted (202) that crewd no longer knows after a SIGKILL and a restart.
#
#   scripts/kill-loop.sh CREWD_BINARY CYCLES [LOGDIR]
#
# STRESS=1 adds a busy loop on every core while it runs. Each cycle's
# crewd kill line goes to stdout; the tally at the end counts the cycles,
# those with jobs lost, and the 404s (with what a second ask answered).
set -euo pipefail
crewd=${1:?crewd binary}; cycles=${2:?cycles}; logs=${3:-$(mktemp -d)}
here=$(cd "$(dirname "$0")/.." && pwd)
bench=$logs/jobsbench
(cd "$here" && go build -o "$bench" ./cmd/jobsbench)
busy=()
if [[ ${STRESS:-0} == 1 ]]; then
	for _ in $(seq "$(nproc)"); do (while :; do :; done) & busy+=($!); done
fi
trap 'for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
afters=(300ms 700ms 1s 1500ms 2500ms)
sleeps=(20ms 50ms 200ms)
procs=(2 4 8)
lost=0 bad=0
for i in $(seq "$cycles"); do
	after=${afters[RANDOM % ${#afters[@]}]} sleep=${sleeps[RANDOM % ${#sleeps[@]}]} p=${procs[RANDOM % ${#procs[@]}]}
	out=$logs/cycle-$i.txt
	GOMAXPROCS=$p "$bench" -crewd "$crewd" -only crewd -rounds 1 -jobs 300 -kill -kill-jobs 2000 \
		-kill-after "$after" -kill-sleep "$sleep" -kill-bound 60s -out "$logs/cycle-$i.md" >"$out" 2>&1 || true
	line=$(grep -E '^  crewd .*lost' "$out" | tail -1 || true)
	echo "cycle $i after=$after sleep=$sleep GOMAXPROCS=$p: ${line:-no result, see $out}"
	grep -q 'lost 0,' <<<"$line" || bad=$((bad + 1))
done
echo "cycles $cycles, with a job lost or no result: $bad; logs in $logs"

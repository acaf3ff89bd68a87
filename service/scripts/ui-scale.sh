#!/usr/bin/env bash
# Times crewd's UI in a real browser over a store of N finished jobs (default
# a million; a tenth failed), written straight into the records' bucket of
# its embedded server: the overview, pages of the jobs table, the failures
# page and a text search, each the median of five loads (Performance API),
# with its weight. Fails when the overview takes 300 ms or more, a jobs page
# 200 ms or more, or a page weighs 300 KB or more. ./test.sh runs it at
# 20,000. About 3 minutes at a million (most of it writing and indexing).
# Usage: service/scripts/ui-scale.sh [N]   (needs chromium: apt-get install chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 -timeout 30m -run '^TestUIAtScale$' -v ./e2e/ -ui-records "${1:-1000000}" |
  grep -E 'records written|ms .* bytes|^(ok|FAIL|---)|want'

#!/usr/bin/env bash
# Runs the tests of every module in the repository with the race detector.
# Usage: ./test.sh            (all modules)
#        ./test.sh prom bench (some modules, by directory)
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -gt 0 ]; then
  mods=("$@")
else
  mapfile -t mods < <(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -printf '%h\n' | sort)
fi
for dir in "${mods[@]}"; do
  echo "== $dir"
  (cd "$dir" && go vet ./... && go test -race -count=1 -timeout 20m ./...)
done

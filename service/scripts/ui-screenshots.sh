#!/usr/bin/env bash
# Draws the UI's screenshots in service/docs/ui (the README shows them):
# TestUIInABrowser's headless chromium saves each screen as it drives it
# (overview, jobs, confirm, job, failures, search, periodic).
# Usage: service/scripts/ui-screenshots.sh   (needs chromium: apt-get install chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/docs/ui"
mkdir -p "$out"
UI_SCREENSHOTS="$out" go test -count=1 -run '^TestUIInABrowser$' ./e2e/
ls -l "$out"

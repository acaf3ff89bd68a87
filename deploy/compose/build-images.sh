#!/usr/bin/env bash
# Builds the two images the compose file runs, with nothing pulled:
#   crewd      service/scripts/build-image.sh (crewd, static, on scratch)
#   crew-nats  nats-server built from its Go module, static, on scratch,
#              with nats/nats.conf (nats/Dockerfile)
# The nats-server binary is kept in
#   ${CREW_DEPLOY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crew-deploy}/bin
# and rebuilt only when its version is not the pin (about 45 s when built).
# Usage: deploy/compose/build-images.sh [CREWD_TAG [NATS_TAG]]
#        (default crewd:dev crew-nats:dev, the compose file's defaults;
#        a tag "-" skips that image)
set -euo pipefail
cd "$(dirname "$0")"
NATS_SERVER_VERSION=v2.15.2   # github.com/nats-io/nats-server/v2
crewd_tag="${1:-crewd:dev}"
nats_tag="${2:-crew-nats:dev}"
if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "build-images: no Docker engine answers" >&2
  exit 1
fi

bin="${CREW_DEPLOY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crew-deploy}/bin"
mkdir -p "$bin"
if ! [ -x "$bin/nats-server" ] || [ "$("$bin/nats-server" --version 2>/dev/null)" != "nats-server: $NATS_SERVER_VERSION" ]; then
  echo "build-images: go install nats-server $NATS_SERVER_VERSION" >&2
  CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false GOWORK=off GOBIN="$bin" \
    go install -trimpath -ldflags '-s -w' "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION"
fi

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
if [ "$nats_tag" != - ]; then
  cp "$bin/nats-server" nats/Dockerfile nats/nats.conf "$ctx/"
  mkdir "$ctx/data"
  # The legacy builder needs no buildx plugin; fall back to the default.
  DOCKER_BUILDKIT=0 docker build -q -t "$nats_tag" "$ctx" >/dev/null 2>&1 || docker build -q -t "$nats_tag" "$ctx" >/dev/null
fi
if [ "$crewd_tag" != - ]; then
  ../../service/scripts/build-image.sh "$crewd_tag" >/dev/null
fi
echo "$crewd_tag $nats_tag"

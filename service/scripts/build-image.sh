#!/usr/bin/env bash
# Builds crewd's image: a static binary (CGO off, trimmed paths) built here,
# then copied into scratch by the Dockerfile, with whichever of docker,
# podman or buildah is present.
# Usage: scripts/build-image.sh [TAG]   (default crewd:dev)
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-crewd:dev}"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$ctx/crewd" ./cmd/crewd
cp Dockerfile "$ctx/"
mkdir "$ctx/data" # the store's directory, empty, owned by the image's user
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  # The legacy builder needs no buildx plugin; fall back to the default.
  DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$ctx" >/dev/null 2>&1 || docker build -q -t "$tag" "$ctx" >/dev/null
elif command -v podman >/dev/null 2>&1; then
  podman build -q -t "$tag" "$ctx" >/dev/null
elif command -v buildah >/dev/null 2>&1; then
  buildah bud --storage-driver vfs --isolation chroot -q -t "$tag" "$ctx" >/dev/null
else
  echo "build-image: no docker engine, podman or buildah found" >&2
  exit 1
fi
echo "$tag"

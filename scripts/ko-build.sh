#!/usr/bin/env bash
# ko-build.sh builds attnx's static image with ko (.ko.yaml), one tarball
# per platform, without pushing and without a container engine:
#
#   out/image/attnx-amd64.tar, out/image/attnx-arm64.tar
#
# Each loads with `docker load -i FILE` (or podman, or `crane push FILE
# REGISTRY/attnx:TAG`) as the image attnx:static, the name deploy/'s
# manifests and Dockerfile.static's build use (KO_DOCKER_REPO and KO_TAGS
# name it otherwise). To push a multi-arch image to a registry instead:
# KO_DOCKER_REPO=REGISTRY/attnx .deps/bin/ko build --bare --tags TAG
# ./cmd/attnx, and name it in deploy/image/kustomization.yaml.
#
# OUT sets the directory; KO_DEFAULTBASEIMAGE another base than .ko.yaml's
# (the tests give one built locally, with no registry reachable);
# PLATFORMS the platforms ("amd64 arm64").
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/image}
KO=${KO:-.deps/bin/ko}
export KO_DOCKER_REPO=${KO_DOCKER_REPO:-attnx}
mkdir -p "$OUT"
for arch in ${PLATFORMS:-amd64 arm64}; do
	"$KO" build --push=false --bare --tags="${KO_TAGS:-static}" --sbom=none --platform="linux/$arch" --tarball="$OUT/attnx-$arch.tar.tmp" ./cmd/attnx >/dev/null
	mv "$OUT/attnx-$arch.tar.tmp" "$OUT/attnx-$arch.tar"
	echo "ko-build: $OUT/attnx-$arch.tar ($(du -h "$OUT/attnx-$arch.tar" | cut -f1), linux/$arch): docker load -i $OUT/attnx-$arch.tar" >&2
done

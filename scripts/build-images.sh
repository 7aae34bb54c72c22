#!/usr/bin/env bash
# Builds turnguard's two container images from binaries built on this host,
# with no registry (it needs Go, Git and a Docker engine; the legacy builder
# will do): the Dockerfile's FROM scratch targets turnguard-prebuilt
# and nats-prebuilt (README "Container images").
#
#   scripts/build-images.sh
#
# Environment:
#   TURNGUARD_IMAGE        tag of the processor image (turnguard/turnguard:dev)
#   TURNGUARD_NATS_IMAGE   tag of the nats-server image (turnguard/nats:dev)
#   TURNGUARD_VERSION      version the binaries report and the label carries
#                          (git describe --tags --always --dirty)
#   TURNGUARD_CA_BUNDLE    CA certificates copied into both images
#                          (/etc/ssl/certs/ca-certificates.crt)
#
# The binaries are static (CGO_ENABLED=0, -trimpath) for linux and the Docker
# engine's architecture; nats-server is the version go.mod pins. They go into
# a temporary build context with the host's CA bundle, a passwd/group naming
# the non-root user 65532, an empty /data and a /tmp; the context is removed
# at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

image=${TURNGUARD_IMAGE:-turnguard/turnguard:dev}
nats_image=${TURNGUARD_NATS_IMAGE:-turnguard/nats:dev}
version=${TURNGUARD_VERSION:-$(git describe --tags --always --dirty)}
revision=$(git rev-parse HEAD)
created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
nats_version=$(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
ca_bundle=${TURNGUARD_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
arch=$(docker version --format '{{.Server.Arch}}')

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
pre=$ctx/prebuilt
mkdir -p "$pre/common/etc/ssl/certs" "$pre/common/tmp" "$pre/turnguard" "$pre/nats" "$pre/data"
chmod 1777 "$pre/common/tmp"
chmod 0755 "$pre/data"

echo "== binaries (linux/$arch, version $version; nats-server $nats_version)"
export CGO_ENABLED=0 GOOS=linux GOARCH=$arch
go build -trimpath \
	-ldflags "-s -w -X github.com/turnguard/turnguard/internal/version.version=$version" \
	-o "$pre/turnguard/" ./cmd/processor ./cmd/replay ./cmd/loadgen ./cmd/healthcheck
go build -trimpath -ldflags "-s -w" -o "$pre/turnguard/example-client" ./examples/client
go build -trimpath -ldflags "-s -w" -o "$pre/nats/nats-server" github.com/nats-io/nats-server/v2
cp "$pre/turnguard/healthcheck" "$pre/nats/healthcheck"
# FROM scratch has no libc: every binary must be static.
for b in "$pre"/turnguard/* "$pre"/nats/*; do
	if command -v file >/dev/null; then
		file -b "$b" | grep -q 'statically linked' || { echo "$b is not static: $(file -b "$b")" >&2; exit 1; }
	elif ldd "$b" >/dev/null 2>&1; then
		echo "$b is not static: $(ldd "$b")" >&2
		exit 1
	fi
done

cp "$ca_bundle" "$pre/common/etc/ssl/certs/ca-certificates.crt"
printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nonroot:x:65532:65532:nonroot:/data:/sbin/nologin' >"$pre/common/etc/passwd"
printf '%s\n' 'root:x:0:' 'nonroot:x:65532:' >"$pre/common/etc/group"
cp Dockerfile "$ctx/Dockerfile"

# Both builds get the same arguments: the legacy builder builds every stage
# before the target, so the nats build goes through turnguard-prebuilt too,
# and with the same arguments finds it all in its cache instead of leaving
# an untagged copy behind. (The first build warns that NATS_VERSION was not
# consumed: it stops before the stage that reads it.)
build_args=(--build-arg VERSION="$version" --build-arg NATS_VERSION="$nats_version"
	--build-arg REVISION="$revision" --build-arg CREATED="$created")
echo "== $image"
docker build --target turnguard-prebuilt -t "$image" "${build_args[@]}" "$ctx"
echo "== $nats_image"
docker build --target nats-prebuilt -t "$nats_image" "${build_args[@]}" "$ctx"
docker images --format '{{.Repository}}:{{.Tag}}  {{.ID}}  {{.Size}}' "$image"
docker images --format '{{.Repository}}:{{.Tag}}  {{.ID}}  {{.Size}}' "$nats_image"

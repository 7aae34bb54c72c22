# Container images of turnguard: the processor (with replay, loadgen and
# healthcheck) and a nats-server of the version pinned in go.mod. Two ways to
# build the same two images from this one file:
#
# 1. From binaries built on the host, with no registry at all (the way the
#    tests and CI build them; README "Container images"):
#
#      scripts/build-images.sh    # turnguard/turnguard:dev and turnguard/nats:dev
#
#    The script builds static binaries (CGO_ENABLED=0, -trimpath, -s -w) into a
#    temporary build context laid out as the prebuilt stages below expect,
#    copies the host's CA bundle into it, and builds the targets
#    turnguard-prebuilt and nats-prebuilt. Both are FROM scratch, so nothing is
#    pulled. They come first in this file because Docker's legacy builder
#    builds every stage before the --target one, in file order: it never
#    reaches the stages below, which pull official images.
#
# 2. From the sources, with a registry (golang:1.26 to build, distroless
#    static:nonroot to run), from the repository root:
#
#      DOCKER_BUILDKIT=1 docker build --target turnguard -t turnguard/turnguard:dev \
#        --build-arg VERSION="$(git describe --tags --always --dirty)" \
#        --build-arg REVISION="$(git rev-parse HEAD)" \
#        --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" .
#      DOCKER_BUILDKIT=1 docker build --target nats -t turnguard/nats:dev .
#
#    This needs BuildKit (the default builder since Docker Engine 23): the
#    legacy builder would build the prebuilt stages first, whose files only
#    the script's context has. This path has not been built where turnguard
#    is developed (no registry there); it runs the same go build commands as
#    the script and mirrors the prebuilt images.
#
# What each image holds, either way:
#   turnguard: /processor (the ENTRYPOINT), /replay, /loadgen, /healthcheck,
#     /example-client (examples/client: the taint session through pkg/client);
#     /etc/turnguard, empty and owned by 65532, where `processor init` lays
#     out a deployment's shared identity (docker-compose.yml mounts a volume);
#     runs as 65532:65532 in WORKDIR /data (its --data-dir, writable by that
#     user); metrics, /healthz and /readyz on 0.0.0.0:9464, which the
#     HEALTHCHECK asks (TURNGUARD_* variables stand in for flags); CA
#     certificates, to verify a TLS NATS server without --nats-ca.
#   nats: /nats-server (the ENTRYPOINT, with monitoring on 8222 and its store
#     under /data; add -js or a config file), /healthcheck against
#     http://127.0.0.1:8222/healthz?js-enabled-only=true; 65532:65532.
# Both carry OCI labels from the build args below.

############################################################################
# Path 1: prebuilt binaries from the build context (scripts/build-images.sh)
#
#   prebuilt/common/     etc/passwd, etc/group, etc/ssl/certs/ca-certificates.crt, tmp/ (1777)
#   prebuilt/turnguard/  processor, replay, loadgen, healthcheck, example-client
#   prebuilt/nats/       nats-server, healthcheck
#   prebuilt/data/       empty: becomes /data (and the processor's /etc/turnguard), owned by 65532
############################################################################

FROM scratch AS turnguard-prebuilt
ARG VERSION=""
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=https://github.com/turnguard/turnguard
ARG LICENSES=NOASSERTION
LABEL org.opencontainers.image.title="turnguard" \
      org.opencontainers.image.description="turnguard: a streaming Guardian for the Agent Control Standard on NATS JetStream (processor, replay, loadgen)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSES}"
COPY prebuilt/common/ /
COPY prebuilt/turnguard/ /
COPY --chown=65532:65532 prebuilt/data/ /data/
COPY --chown=65532:65532 prebuilt/data/ /etc/turnguard/
USER 65532:65532
WORKDIR /data
ENV TURNGUARD_DATA_DIR=/data \
    TURNGUARD_METRICS=0.0.0.0:9464
EXPOSE 9464
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/healthcheck", "http://127.0.0.1:9464/readyz"]
ENTRYPOINT ["/processor"]

FROM scratch AS nats-prebuilt
ARG NATS_VERSION=v2.15.3
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=https://github.com/turnguard/turnguard
LABEL org.opencontainers.image.title="turnguard-nats" \
      org.opencontainers.image.description="nats-server ${NATS_VERSION} (github.com/nats-io/nats-server), built from the version turnguard's go.mod pins" \
      org.opencontainers.image.version="${NATS_VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY prebuilt/common/ /
COPY prebuilt/nats/ /
COPY --chown=65532:65532 prebuilt/data/ /data/
USER 65532:65532
WORKDIR /data
EXPOSE 4222 6222 8222
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/healthcheck", "http://127.0.0.1:8222/healthz?js-enabled-only=true"]
ENTRYPOINT ["/nats-server", "--http_port", "8222", "--store_dir", "/data"]

############################################################################
# Path 2: from the sources, with a registry (BuildKit)
############################################################################

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
# The same builds as scripts/build-images.sh. The context has no .git
# (.dockerignore): the version comes from VERSION, not from Go's VCS stamp.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/turnguard/turnguard/internal/version.version=${VERSION}" \
      -o /out/turnguard/ ./cmd/processor ./cmd/replay ./cmd/loadgen ./cmd/healthcheck \
 && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o /out/turnguard/example-client ./examples/client \
 && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" \
      -o /out/nats/nats-server github.com/nats-io/nats-server/v2 \
 && cp /out/turnguard/healthcheck /out/nats/healthcheck \
 && mkdir -p /out/data

# distroless static:nonroot has what prebuilt/common holds: /etc/passwd with
# nonroot (65532), CA certificates, /tmp.
FROM gcr.io/distroless/static-debian12:nonroot AS turnguard
ARG VERSION=""
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=https://github.com/turnguard/turnguard
ARG LICENSES=NOASSERTION
LABEL org.opencontainers.image.title="turnguard" \
      org.opencontainers.image.description="turnguard: a streaming Guardian for the Agent Control Standard on NATS JetStream (processor, replay, loadgen)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSES}"
COPY --from=build /out/turnguard/ /
COPY --from=build --chown=65532:65532 /out/data/ /data/
COPY --from=build --chown=65532:65532 /out/data/ /etc/turnguard/
USER 65532:65532
WORKDIR /data
ENV TURNGUARD_DATA_DIR=/data \
    TURNGUARD_METRICS=0.0.0.0:9464
EXPOSE 9464
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/healthcheck", "http://127.0.0.1:9464/readyz"]
ENTRYPOINT ["/processor"]

FROM gcr.io/distroless/static-debian12:nonroot AS nats
ARG NATS_VERSION=v2.15.3
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=https://github.com/turnguard/turnguard
LABEL org.opencontainers.image.title="turnguard-nats" \
      org.opencontainers.image.description="nats-server ${NATS_VERSION} (github.com/nats-io/nats-server), built from the version turnguard's go.mod pins" \
      org.opencontainers.image.version="${NATS_VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/nats/ /
COPY --from=build --chown=65532:65532 /out/data/ /data/
USER 65532:65532
WORKDIR /data
EXPOSE 4222 6222 8222
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/healthcheck", "http://127.0.0.1:8222/healthz?js-enabled-only=true"]
ENTRYPOINT ["/nats-server", "--http_port", "8222", "--store_dir", "/data"]

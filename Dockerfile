# The txlogd image: a static build, then a scratch runtime that holds the two
# binaries, CA certificates and an empty /data owned by the non-root user.
#
#   docker build --build-arg VERSION=v1.2.0 --build-arg REVISION=$(git rev-parse HEAD) -t txlog:v1.2.0 .
#   docker run -v txlog-n1:/data -p 8080:8080 -p 7101:7101 txlog:v1.2.0 \
#     --id n1 --raft-addr 10.0.0.1:7101 --advertise-http-addr 10.0.0.1:8080 \
#     --cluster n1=10.0.0.1:7101,n2=10.0.0.2:7101,n3=10.0.0.3:7101
#
# --raft-addr is both where the peer link listens and the address Raft gives
# the other members, so it names this node's reachable address, as does
# --advertise-http-addr; the image sets only what needs no choosing.
#
# The build machines have no container engine, so this file is not built in
# CI. Its build stage runs scripts/release.sh for the image's platform, the
# same command, with the same TXLOG_RELEASE_PLATFORMS, that the release test
# runs for the host's (cmd/txlogd/release_test.go, TestRelease), so what the
# test checks (static, -trimpath, the version stamped, SHA256SUMS) is what
# this image holds. docs/deploy.md, "The image".

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, so that a change in the code does not download them again.
# third_party holds the replaced hashicorp/raft and bbolt (go.mod's replace).
COPY go.mod go.sum ./
COPY third_party/ third_party/
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN TXLOG_REVISION="${REVISION}" TXLOG_RELEASE_PLATFORMS="${TARGETOS}/${TARGETARCH}" \
      scripts/release.sh "${VERSION}" /out \
 && cd /out && sha256sum -c SHA256SUMS \
 && mkdir -p /rootfs/usr/local/bin /rootfs/data \
 && cp "/out/txlogd-${VERSION}-${TARGETOS}-${TARGETARCH}" /rootfs/usr/local/bin/txlogd \
 && cp "/out/txlog-${VERSION}-${TARGETOS}-${TARGETARCH}" /rootfs/usr/local/bin/txlog \
 && chown 65532:65532 /rootfs/data && chmod 0700 /rootfs/data

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /rootfs/ /
# No shell, no package, no passwd file: a numeric user, the same as
# distroless's "nonroot". A named volume mounted at /data starts as the
# image's /data, owned by it.
USER 65532:65532
VOLUME ["/data"]
# 8080 the HTTP API (clients, /healthz, /readyz, /metrics), 7101 the peer
# link (Raft and every node-to-node call: keep it on a private network).
EXPOSE 8080 7101
ENV TXLOG_DATA_DIR=/data \
    TXLOG_HTTP_ADDR=0.0.0.0:8080
# scratch has no curl: txlogd checks itself. /healthz answers 200 while the
# process serves HTTP; /readyz would mark every node unhealthy while the
# cluster has no leader, when they still take writes (docs/deploy.md). A new
# node answers 503 until its --cluster peers answer (or its --join target
# does): it shows unhealthy meanwhile.
# A node with TLS on its client port needs its own HEALTHCHECK (an https URL
# is verified with the CA bundle above, and /healthz needs no credential,
# but a client certificate is not presented).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/txlogd", "--healthcheck", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/txlogd"]

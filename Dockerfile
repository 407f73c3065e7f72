# The leasehold image: the `leasehold` binary that `cmake --install` ships
# (the install tests/install/ tests), on Debian 12 slim, run as a user that
# is not root.
#
# Stages
#   build    Debian 12 slim with what scripts/setup.sh --build installs (the
#            build's packages and uPlot, no test tool); the default preset
#            (the optimised build the system tests run against, with line
#            tables for backtraces), the `leasehold` binary only, installed
#            with `cmake --install` into /opt/leasehold.
#   runtime  Debian 12 slim with the shared libraries the binary and its
#            codecs module (lib/leasehold/, loaded on the first movie) link,
#            by their Debian packages, ca-certificates (TLS to AWS) and curl
#            (the health check). No compiler, no -dev package, no secret.
#
# Conventions the deployment relies on (deploy/):
#   user     10001:10001, numeric so that ECS and Kubernetes can tell it is
#            not root; the working folder /var/lib/leasehold is its own, and
#            media/ in it is where serve and trace-worker keep movies
#            (--media-dir, default media) when they are not on S3.
#   8080     `leasehold serve --listen 0.0.0.0:8080 --insecure-http`, behind a
#            load balancer that does TLS; GET /healthz there.
#   9090     `leasehold worker` and `leasehold trace-worker` with
#            `--metrics-listen 127.0.0.1:9090`: GET /metrics and /healthz,
#            on loopback only.
#   HEALTHCHECK  GET http://127.0.0.1:$LEASEHOLD_HEALTH_PORT/healthz, which
#            must answer 2xx (a worker whose store is failing answers 503).
#            LEASEHOLD_HEALTH_PORT is 9090 here; serve's task sets 8080. A
#            one-off command (`lease list`, `store init`) serves no /healthz:
#            run it with --no-healthcheck, or ignore the status.
#
# Stopping: ENTRYPOINT is exec form, so leasehold is PID 1 and receives
# SIGTERM itself. serve, worker and trace-worker block SIGTERM and SIGINT
# in every thread and wait for them (src/cli/serve.cc, worker_process.cc):
# a blocked signal reaches PID 1 although it installs no handler. On
# SIGTERM a worker hands its connections over, every lease released with
# its final checkpoint, well within a second for 1,000 connections
# (docs/benchmarks.md, "Handing over 1,000 connections on SIGTERM"), inside
# ECS's and Docker's default 30 s and 10 s before SIGKILL. The ECS task
# definitions set initProcessEnabled, so that an init reaps zombies.
#
# tests/deploy/dockerfile_check.py checks this file against the build in
# every `make test` (no Docker engine runs there): each library that `ldd`
# lists for the binary and the module belongs to a package this file
# installs, the user, the ports, the health check, the entry point.
#
#   docker build -t leasehold .
#   docker run --rm leasehold --help

FROM debian:12-slim AS build
WORKDIR /src
# The packages first, in a layer of their own that source edits keep.
COPY scripts/setup.sh scripts/setup.sh
COPY package.json package-lock.json ./
RUN scripts/setup.sh --build
COPY . .
RUN cmake --preset default \
 && cmake --build --preset default --target leasehold_product \
 && cmake --install build --prefix /opt/leasehold

FROM debian:12-slim AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="leasehold" \
      org.opencontainers.image.description="Exclusive, self-healing ownership of streams, jobs and rows on SQLite or DynamoDB: the stream fleet and the movie tracing service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="docker.io/library/debian:12-slim"

# One package per library the binary and the codecs module name (readelf
# -d: NEEDED); what those libraries link comes with them as dependencies.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates \
      curl \
      libc6 \
      libgcc-s1 \
      libstdc++6 \
      zlib1g \
      libssl3 \
      libsqlite3-0 \
      libspdlog1.10 \
      libfmt9 \
      libargon2-1 \
      libboost-json1.81.0 \
      libopencv-core406 \
      libopencv-imgproc406 \
      libopencv-imgcodecs406 \
      libopencv-videoio406 \
      libavformat59 \
      libavcodec59 \
      libavutil57 \
      libswscale6 \
 && rm -rf /var/lib/apt/lists/*

RUN groupadd --gid 10001 leasehold \
 && useradd --uid 10001 --gid 10001 --home-dir /var/lib/leasehold --no-create-home \
      --shell /usr/sbin/nologin leasehold \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/leasehold /var/lib/leasehold/media

# The binary finds its codecs module at ../lib/leasehold/ from its own folder.
COPY --from=build /opt/leasehold/bin/leasehold /usr/local/bin/leasehold
COPY --from=build /opt/leasehold/lib/leasehold/ /usr/local/lib/leasehold/

WORKDIR /var/lib/leasehold
ENV LEASEHOLD_HEALTH_PORT=9090
EXPOSE 8080 9090
USER 10001:10001

HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD curl --fail --silent --show-error --max-time 4 --output /dev/null \
        --write-out '%{http_code}' "http://127.0.0.1:${LEASEHOLD_HEALTH_PORT}/healthz" \
      | grep -q '^2' || exit 1

STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/leasehold"]
CMD ["--help"]

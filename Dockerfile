# Countersign's container image (docs/DEPLOY.md, "Containers").
#
# Two stages: the build runs the repository's own scripts (scripts/setup.sh
# installs the wasm target, wasm-bindgen-cli and npm's binaryen;
# scripts/site.sh builds the console's browser side; cargo the server), and
# the final stage is distroless (glibc, libssl, CA certificates; no shell,
# no package manager), runs as the non-root user 65532, needs nothing
# written outside /data (run it with a read-only root filesystem, as
# docker-compose.yml does) and checks its own /healthz with
# `countersign probe`. Configuration: COUNTERSIGN_* variables
# (docs/CONFIG.md). make test lints this file with hadolint.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
# Node and npm for scripts/setup.sh's npm packages (binaryen's wasm-opt).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends nodejs npm \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ENV CARGO_TARGET_DIR=/src/target/container
RUN scripts/setup.sh \
    && scripts/site.sh --release \
    && . scripts/env.sh \
    && cargo build --release --locked -p server --bin countersign \
    && mkdir -p /out/data \
    && cp "$CARGO_TARGET_DIR/release/countersign" /out/countersign \
    && cp -r target/site /out/site

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/countersign /app/countersign
COPY --from=build /out/site /app/site
COPY --from=build --chown=65532:65532 /out/data /data
ENV COUNTERSIGN_LISTEN=0.0.0.0:8080 \
    COUNTERSIGN_DATA_DIR=/data \
    COUNTERSIGN_SITE_ROOT=/app/site \
    COUNTERSIGN_LOG_FORMAT=json
USER 65532:65532
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/app/countersign", "probe", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/app/countersign"]
CMD ["serve"]

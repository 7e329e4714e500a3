# The controller's container: `serve`, `relay` and `tick` from one image.
# DENO_IMAGE is the official image; tests/container/ builds a stand-in with the same layout
# because the build machines cannot pull from a container registry.
ARG DENO_IMAGE=docker.io/denoland/deno:2.9.6
FROM ${DENO_IMAGE}

WORKDIR /app
COPY . .
# Fetch and type-check everything at build time, so the running container writes nothing.
RUN DENO_TLS_CA_STORE=system,mozilla deno cache --frozen main.ts && deno check main.ts

# V8 trades some speed for size: at 5,000 nodes the controller peaks at ~260 MiB instead of ~530
# and rests near 210 instead of 240-290 (bench/controller.ts; ADR 0026).
ENV DENO_V8_FLAGS=--optimize-for-size

USER 1993:1993
EXPOSE 8443
# The runtime. What a workload may read and reach comes first in its arguments
# (manifests/base, manifests/edge-agent): the paths it mounts, the API server's address and what
# it listens on or calls. The environment stays readable as a whole: a dependency of
# client-node (debug, through socks-proxy-agent) enumerates it when loaded (ADR 0025); the
# manifests put nothing in it but the kubelet's service variables. Without arguments the image
# prints its help, needing nothing.
ENTRYPOINT ["deno", "run", "--cached-only", "--no-check", "--allow-env"]
CMD ["--allow-read=/app", "main.ts", "help"]

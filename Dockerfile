# The controller's container: `serve`, `relay` and `tick` from one image.
# DENO_IMAGE is the official image; tests/container/ builds a stand-in with the same layout
# because the build machines cannot pull from a container registry.
ARG DENO_IMAGE=docker.io/denoland/deno:2.9.6
FROM ${DENO_IMAGE}

WORKDIR /app
COPY . .
# Fetch and type-check everything at build time, so the running container writes nothing.
RUN DENO_TLS_CA_STORE=system,mozilla deno cache --frozen main.ts && deno check main.ts

USER 1993:1993
EXPOSE 8080
ENTRYPOINT ["deno", "run", "--cached-only", "--no-check", "--allow-net", "--allow-env", \
  "--allow-read=/app,/deno-dir,/var/run/secrets,/etc/edgeroll", "main.ts"]
CMD ["serve", "--port", "8080"]

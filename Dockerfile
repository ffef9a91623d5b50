# syntax=docker/dockerfile:1
# Roster in a container: compiled in a build stage with the development dependencies, run from a
# slim image with the production dependencies only, as the unprivileged `node` user.
#
#   docker build -t roster .
#   docker run --rm -p 127.0.0.1:5000:5000 -p 127.0.0.1:8765:8765 roster
#
# Users in memory by default, as anywhere. To keep them in SQLite, on a volume at /data (made here and
# owned by `node`, so a fresh named volume is writable by the process):
#
#   docker run --rm -p 127.0.0.1:5000:5000 -v roster-data:/data -e DATABASE_URL=sqlite:/data/roster.db roster
#
# With podman, build with `--format docker`: the OCI format has no HEALTHCHECK, and podman drops it.
# Settings are environment variables (docs/configuration.md). HOST is 0.0.0.0 here: inside a container the
# ports must be reachable from outside it. The health check asks /readyz (200 when the user store is
# reachable and the instance is not shutting down); with TLS_CERT set, point it at https instead.
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the sources are not here yet for `prepare`; the build runs below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/build.mjs ./scripts/
COPY src ./src
COPY web ./web
RUN npm run build

FROM node:${NODE_VERSION}-bookworm-slim AS production-dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM node:${NODE_VERSION}-bookworm-slim
# V8's young generation as Node 22 sizes it (two semi-spaces of 16 MiB): Node 24's default of up to
# 64 MiB each held about 75 MiB more RSS in a 30-minute soak for no throughput measured (BENCHMARKS.md,
# "Memory over a long run"). `docker run -e NODE_OPTIONS=...` replaces it.
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=16 \
    HOST=0.0.0.0 \
    PORT=5000 \
    WS_PORT=8765
WORKDIR /app
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY migrations ./migrations
# The SQLite folder: created owned by `node`, so a named volume mounted here starts writable (Docker
# copies the folder's owner into a new volume). /app stays root's: the code is not writable at run time.
RUN mkdir /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 5000 8765
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM (docker stop) shuts down gracefully: chat gets 1001, requests in flight finish, exit 0.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]

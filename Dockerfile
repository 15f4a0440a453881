# syntax=docker/dockerfile:1
# admission-gateway image: build with dev dependencies, run with production dependencies and dist/ only.
# The runtime stage is distroless (no shell, no package manager) and runs as a non-root user.
# No Docker engine runs in CI: test/e2e/production-install.e2e.ts carries this file out instruction by
# instruction in a temporary directory (real `npm ci --omit=dev`, real build, COPY only what a clean
# checkout has) and serves reviews from the result, so keep to FROM/WORKDIR/COPY/RUN/ENV/USER/EXPOSE/CMD.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
# No dependency needs an install script (package-lock.json: only esbuild, dev, has one; tsc does not use it).
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY server ./server
COPY plugins ./plugins
COPY certs/generate.ts ./certs/generate.ts
RUN npm run build

FROM node:20-bookworm-slim AS production-deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts

FROM gcr.io/distroless/nodejs20-debian12:nonroot
WORKDIR /app
ENV NODE_ENV=production
COPY --from=production-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json gateway.yaml ./
USER 65532:65532
EXPOSE 8443 9090
# The distroless entrypoint is node itself: this runs `node dist/server/main.js serve`.
CMD ["dist/server/main.js", "serve"]

# syntax=docker/dockerfile:1
# admission-gateway image: build with dev dependencies, run with production dependencies and dist/ only.
# The runtime stage is distroless (no shell, no package manager) and runs as a non-root user.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY server ./server
COPY plugins ./plugins
COPY certs/generate.ts ./certs/generate.ts
RUN npm run build

FROM node:20-bookworm-slim AS production-deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund

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

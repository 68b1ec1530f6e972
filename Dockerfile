# syntax=docker/dockerfile:1
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
# The patched dependencies go.mod replaces (third_party/*/README.md).
COPY third_party ./third_party
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/agent ./cmd/agent \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/agent-sandbox ./cmd/agent-sandbox

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin agent \
 && mkdir -p /data && chown agent:agent /data
# agent-sandbox beside agent: the small helper every Bash command and tool
# server starts through (the runtime re-executes itself without it).
COPY --from=build /out/agent /out/agent-sandbox /usr/local/bin/
# bypass mode is safe to offer only because every Bash command and tool
# server runs in the kernel sandbox: refuse to start without it.
ENV AGENT_HOME=/data \
    AGENT_DEFAULT_MODE=bypass \
    AGENT_SANDBOX=required \
    AGENT_HEALTH_PORT=8080
USER agent
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/agent"]
CMD ["start"]

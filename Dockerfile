# syntax=docker/dockerfile:1
# Container image of both servers: pdpp-mcp-server (the entrypoint) and
# paper-mcp-server. Build with
#   docker build --build-arg VERSION=$(git describe --tags --always) -t pdpp-mcp .
# The binaries are static (CGO off) and run as a non-root user on a
# distroless base that has CA certificates and no shell.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ENV CGO_ENABLED=0
# The build flags below are read by a test (so it cannot drift from this file).
RUN go build -trimpath -ldflags "-s -w -X github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/cli.Version=${VERSION} -X github.com/pdpp-mcp/pdpp-mcp/internal/papers/cli.Version=${VERSION}" -o /out/ ./cmd/pdpp-mcp-server ./cmd/paper-mcp-server

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pdpp-mcp-server /out/paper-mcp-server /usr/local/bin/
# distroless "nonroot" (numeric, so Kubernetes can check runAsNonRoot).
USER 65532:65532
# Sized for a 256 MiB container, as deploy/kubernetes runs it: the Go
# runtime's soft memory limit 32 MiB below it, request bodies of at most
# 128 KiB and at most 384 open connections, so the worst case of the bounds
# (docs/deploy.md) fits. With another memory limit, pass
# -e GOMEMLIMIT=<limit minus 32 MiB>.
ENV GOMEMLIMIT=224MiB PDPP_MCP_MAX_BODY_BYTES=131072 PDPP_MCP_MAX_CONNS=384
# 8787: /mcp of pdpp-mcp-server, 8788: /mcp of paper-mcp-server, 9464: the admin listener
# (/healthz, /readyz, /metrics), apart from /mcp and its connection bounds.
EXPOSE 8787 8788 9464
ENTRYPOINT ["/usr/local/bin/pdpp-mcp-server"]
CMD ["http", "--listen", "0.0.0.0:8787", "--admin-listen", "0.0.0.0:9464"]

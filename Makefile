# Every target needs only the Go toolchain; `go run ./tools/ci` is the README's
# test command and what CI runs.
GO ?= go
FUZZTIME ?= 60s

.PHONY: all generate check-generated build test ci bench bench-bounds fuzz demo

all: ci

generate:
	$(GO) generate ./...

check-generated:
	$(GO) run ./tools/ci -only-generated

build:
	$(GO) build -o bin/ ./cmd/...

test:
	$(GO) test -race ./...

ci:
	$(GO) run ./tools/ci

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./...
	$(GO) run ./tools/benchrss

# Ten concurrent 5,000-item batches against the built server: its peak RSS
# must stay under 100 MB and the RS must see at most the batch cap of calls
# per batch (exits non-zero otherwise).
bench-bounds:
	$(GO) run ./tools/benchrss -flood

fuzz:
	$(GO) run ./tools/ci -only-fuzz -fuzztime $(FUZZTIME)

demo:
	$(GO) run ./cmd/pdpp-mcp-server demo

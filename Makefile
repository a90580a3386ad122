# Every target needs only the Go toolchain; `go run ./tools/ci` is the README's
# test command and what CI runs.
GO ?= go
FUZZTIME ?= 60s

.PHONY: all generate check-generated build test ci bench fuzz demo

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

fuzz:
	$(GO) run ./tools/ci -only-fuzz -fuzztime $(FUZZTIME)

demo:
	$(GO) run ./cmd/pdpp-mcp-server demo

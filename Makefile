# Every target needs only the Go toolchain; `go run ./tools/ci` is the README's
# test command and what CI runs.
GO ?= go
FUZZTIME ?= 60s

.PHONY: all generate check-generated build test ci bench bench-long fuzz demo

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
	$(GO) test -run '^$$' -fuzz '^FuzzParseID$$' -fuzztime $(FUZZTIME) ./internal/handles
	$(GO) test -run '^$$' -fuzz '^FuzzParseRecordURI$$' -fuzztime $(FUZZTIME) ./internal/handles
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeCursor$$' -fuzztime $(FUZZTIME) ./internal/handles
	$(GO) test -run '^$$' -fuzz '^FuzzEncodeFilter$$' -fuzztime $(FUZZTIME) ./internal/query

demo:
	$(GO) run ./cmd/pdpp-mcp-server demo

# Every target needs only the Go toolchain; `go run ./tools/ci` is the README's
# test command and what CI runs.
GO ?= go
FUZZTIME ?= 60s

.PHONY: all generate check-generated build test ci bench profile fuzz demo

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

# CPU and allocation profiles of the server half of the four measured calls
# (search, fetch, read_record_field twice) against the demo RS; read them
# with `go tool pprof -top profiles/cpu.out` (or mem.out, -sample_index=alloc_space).
PROFILE_DIR ?= profiles
profile:
	mkdir -p $(PROFILE_DIR)
	$(GO) test -run '^$$' -bench 'BenchmarkServerCalls' -benchmem -benchtime 3s \
		-cpuprofile $(PROFILE_DIR)/cpu.out -memprofile $(PROFILE_DIR)/mem.out \
		-o $(PROFILE_DIR)/benchmarks.test ./internal/benchmarks

fuzz:
	$(GO) run ./tools/ci -only-fuzz -fuzztime $(FUZZTIME)

demo:
	$(GO) run ./cmd/pdpp-mcp-server demo

# Every target but scale-test needs only the Go toolchain (ci also git, to list
# the tracked files); `go run ./tools/ci` is the README's test command and what
# CI runs. scale-test also needs HAProxy (apt-get install haproxy) and is not
# part of the default test command.
GO ?= go
FUZZTIME ?= 60s
SCALEFLAGS ?=

.PHONY: all generate check-generated build test ci bench bench-bounds bench-memory bench-hidden-full bench-hostile bench-fair bench-strangers profile fuzz demo scale-test view-screenshot

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

# Fair shares at default flags against the built server: four concurrent
# 16-item batches of full calls end with no item server_busy or
# request_timeout and another token's search answers within 2 s; beside one
# token's full calls looping on 24 connections, its searches keep a p95 of
# at most 0.75 s (exits non-zero otherwise).
bench-fair:
	$(GO) run ./tools/benchrss -fair

# Strangers against the built server, each flood in a child process, the
# honest clients timed in this one (exits non-zero when an aim is missed;
# about a minute and a half; measure on an otherwise idle machine):
# - made-up bearers, 100 loopback addresses x 400 goroutines, the RS taking
#   1 s to reject each, beside a token with a cached verdict: >= 99% of its
#   100 searches answered, p95 within 2x idle (or 25 ms);
# - a first burst of 50 parallel calls with a new token: >= 48 answered;
# - made-up bearers from 40 and from 100 /24s: >= 90% of never-seen honest
#   tokens' first calls answered, p95 <= 5 s;
# - 17 /24s x 512 held connections (also at the shipped --max-conns=384),
#   and one address x 512: >= 90% of a verified token's calls on new
#   connections from another network (a neighbour) answered, and the admin
#   listener's probes all answered.
bench-strangers:
	$(GO) run ./tools/benchrss -strangers

# detail "full" and memory against the built server over HTTP, a scripted RS
# serving a page of 100 records x 78,000 characters of < and of HTML: 8 full
# plus 4 compact calls at once peak at most 160 MB RSS, RSS is back within
# 2x idle a minute later, one full fetch of a page-sized record rises at most
# 64 MB; at the default ceiling and at 16 MiB (exits non-zero otherwise;
# about a minute and a half).
bench-memory:
	$(GO) run ./tools/benchrss -fullcap

# Escaped full detail against the built server over HTTP without GOMEMLIMIT,
# a scripted RS whose one record is 3.9 MB of Unicode tag characters (11.7 MB
# as the \u escapes full data writes): 24 concurrent full fetches peak at
# most 160 MB RSS (exits non-zero otherwise; about ten seconds).
bench-hidden-full:
	$(GO) run ./tools/benchrss -hiddenfull

# Decoded size against the built server over HTTP, a scripted RS whose one
# record holds a 7.8 MB array of 2.6 million empty objects: 6 concurrent
# query_records calls, then 6 fetch calls (each in a fresh server), peak at
# most 160 MB RSS and cost at most 3 CPU-seconds together (exits non-zero
# otherwise; about ten seconds).
bench-hostile:
	$(GO) run ./tools/benchrss -hostile

# CPU and allocation profiles of the server half of the five measured calls
# (search, query_records, fetch, read_record_field twice) against the demo RS; read them
# with `go tool pprof -top profiles/cpu.out` (or mem.out, -sample_index=alloc_space).
PROFILE_DIR ?= profiles
profile:
	mkdir -p $(PROFILE_DIR)
	$(GO) test -run '^$$' -bench 'BenchmarkServerCalls' -benchmem -benchtime 3s \
		-cpuprofile $(PROFILE_DIR)/cpu.out -memprofile $(PROFILE_DIR)/mem.out \
		-o $(PROFILE_DIR)/benchmarks.test ./internal/testsupport/benchmarks

fuzz:
	$(GO) run ./tools/ci -only-fuzz -fuzztime $(FUZZTIME)

# docs/evidence-view.png: the evidence view rendering a demo search, taken
# by its browser test in headless Chromium (apt-get install chromium).
view-screenshot:
	PDPP_VIEW_SCREENSHOT=$(CURDIR)/docs/evidence-view.png $(GO) test -count=1 -run 'TestViewInChromium/search' ./internal/pdpp/view

demo:
	$(GO) run ./cmd/pdpp-mcp-server demo

# Three replicas behind HAProxy, 50 clients for 60 s, one replica restarted
# mid-run; fails on any failed call. See docs/deploy.md.
scale-test:
	$(GO) run ./tools/scaletest $(SCALEFLAGS)

package benchmarks

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
)

// Every benchmark below runs the demo RS as a real HTTP server on loopback
// with a fixed client token and compares a tool call made through the adapter
// with the same RS request made directly (see Workload and
// TestWorkloadDirectMatchesAdapter). Each comparison has these sub-benchmarks:
//
//	direct   the RS request alone, body read and decoded into the typed model
//	adapter  the MCP tools/call that makes that request, through an mcp-go
//	         client (in-process, or Streamable HTTP over loopback)
//	server   (in-process only) the server half of that call as a stdio
//	         server runs it: dispatch the raw JSON-RPC request, encode the
//	         reply; no MCP client decoding. Reports wire-bytes, the reply
//	         size, to set against the RS body-bytes the direct path reports
//	once     (in-process only) server, then one decode of the reply into a
//	         typed result, as a client that decodes each reply once (the
//	         official Go SDK client, a bare JSON-RPC client) would; an extra
//	         path next to adapter, never instead of it
//	floor    (in-process only) the same mcp-go client calling a pass-through
//	         tool (NewFloorServer) that makes the direct request and returns
//	         the RS body verbatim: the least any adapter costs through this
//	         client, since its framing and decoding are paid whatever the
//	         server does
//	floor-once (in-process only) the floor's server half followed by one
//	         decode of its reply, as once is for the adapter: the least any
//	         adapter costs through a client that decodes each reply once
//	raw      (HTTP only) the tools/call posted by a bare HTTP client that
//	         reads the reply and decodes only isError
//	ratio    all of the above interleaved in one loop, rotating which goes
//	         first, so they share the same process state. ns/op, B/op and
//	         allocs/op are for the whole set; the metrics are per call:
//	         adapter/direct (mean time ratio, the target), adapter-p50/direct
//	         (ratio of medians), server/direct, once/direct or raw/direct, and each
//	         path's mean in *-ns; in process also floor/direct,
//	         floor-once/direct, adapter/floor and once/floor-once, each of
//	         the last two with its standard error (-se, RatioSE)
//
// B/op and allocs/op include the demo RS's own work, which runs in the same
// process.
//
//	go test -run '^$' -bench . -benchmem -benchtime 2s ./internal/testsupport/benchmarks

// BenchmarkSearch: search q=zephyrmarker limit=10 through the in-process
// mcp-go client (stdio mode) vs GET /v1/search.
func BenchmarkSearch(b *testing.B) { benchInProcess(b, "search") }

// BenchmarkQueryRecords: query_records of ten transcripts (compact reply)
// vs GET /v1/streams/transcripts/records?limit=10.
func BenchmarkQueryRecords(b *testing.B) { benchInProcess(b, "query") }

// BenchmarkFetch: fetch of a 21,000-character transcript vs GET
// /v1/streams/transcripts/records/tr-5.
func BenchmarkFetch(b *testing.B) { benchInProcess(b, "fetch") }

// BenchmarkReadRecordField: read_record_field of the transcript text, the
// default window and a window centred on q, vs GET .../field-window.
func BenchmarkReadRecordField(b *testing.B) {
	b.Run("window", func(b *testing.B) { benchInProcess(b, "read_field") })
	b.Run("q", func(b *testing.B) { benchInProcess(b, "read_field_q") })
}

// path is one way of making a measured call.
type path struct {
	name string
	run  func() error
}

func benchInProcess(b *testing.B, name string) {
	call := callNamed(b, name)
	rsURL := startRS(b, nil)
	direct := directClient(b, rsURL)
	mcpc, srv := inProcess(b, rsURL)
	floor, floorSrv := floorInProcess(b, rsURL)
	msg := toolCallMessage(b, call)
	// The floor is sent the call's own arguments (its tool ignores them),
	// so both servers decode the same request.
	floorCall := Call{Name: call.Name, Tool: FloorTool(call), Args: call.Args}
	floorMsg := toolCallMessage(b, floorCall)
	body, wire := 0, 0
	benchPaths(b, []path{
		{"direct", func() error {
			_, n, err := callDirect(direct, call)
			body = n
			return err
		}},
		{"adapter", func() error { _, err := callTool(mcpc, call); return err }},
		{"server", func() error {
			out, err := serveMessage(srv, msg)
			wire = len(out)
			return err
		}},
		{"once", func() error { return callOnce(srv, msg) }},
		{"floor", func() error { _, err := callTool(floor, floorCall); return err }},
		{"floor-once", func() error { return callOnce(floorSrv, floorMsg) }},
	}, map[string]func(*testing.B){
		"direct": func(b *testing.B) { b.ReportMetric(float64(body), "body-bytes") },
		"server": func(b *testing.B) { b.ReportMetric(float64(wire), "wire-bytes") },
	})
}

// BenchmarkHTTPToolCall: one client, tools/call over loopback through the
// full /mcp transport stack with the mcp-go Streamable HTTP client vs the
// direct RS request over loopback.
func BenchmarkHTTPToolCall(b *testing.B) {
	rsURL := startRS(b, nil)
	direct := directClient(b, rsURL)
	mcpURL := startAdapterHTTP(b, rsURL)
	mcpc := httpClient(b, mcpURL)
	bare := NewHTTPClient()
	for _, call := range Workload() {
		msg := toolCallMessage(b, call)
		b.Run(call.Name, func(b *testing.B) {
			benchPaths(b, []path{
				{"direct", func() error { _, _, err := callDirect(direct, call); return err }},
				{"adapter", func() error { _, err := callTool(mcpc, call); return err }},
				{"raw", func() error { _, err := postMessage(bare, mcpURL, msg); return err }},
			}, nil)
		})
	}
}

// benchPaths runs one sub-benchmark per path, then the ratio sub-benchmark.
// paths[0] is the direct call every other path is compared with. Each path
// runs once before timing, so the adapter's one-time token check (a cached
// GET /v1/schema) and connection set-up are not measured. after, keyed by
// path name, adds metrics at the end of that path's sub-benchmark.
func benchPaths(b *testing.B, paths []path, after map[string]func(*testing.B)) {
	for _, p := range paths {
		if err := p.run(); err != nil {
			b.Fatalf("%s: %v", p.name, err)
		}
	}
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.run(); err != nil {
					b.Fatal(err)
				}
			}
			if f := after[p.name]; f != nil {
				f(b)
			}
		})
	}
	b.Run("ratio", func(b *testing.B) { benchRatio(b, paths) })
}

// benchRatio interleaves the paths, rotating the starting one each round.
func benchRatio(b *testing.B, paths []path) {
	b.ReportAllocs()
	lat := make([][]time.Duration, len(paths))
	round := 0
	for b.Loop() {
		for k := range paths {
			i := (round + k) % len(paths)
			start := time.Now()
			if err := paths[i].run(); err != nil {
				b.Fatalf("%s: %v", paths[i].name, err)
			}
			lat[i] = append(lat[i], time.Since(start))
		}
		round++
	}
	mean := func(v []time.Duration) float64 {
		var t time.Duration
		for _, x := range v {
			t += x
		}
		return float64(t) / float64(len(v))
	}
	if round == 0 {
		b.Fatal("no calls measured")
	}
	direct := mean(lat[0])
	for i, p := range paths {
		b.ReportMetric(mean(lat[i]), p.name+"-ns")
		if i == 0 {
			continue
		}
		b.ReportMetric(mean(lat[i])/direct, p.name+"/direct")
		if p.name == "adapter" {
			b.ReportMetric(float64(Percentile(lat[i], 50))/float64(Percentile(lat[0], 50)), "adapter-p50/direct")
		}
	}
	// Each path set against its floor through the same client, when both
	// were measured; each round timed every path once, so the two are
	// paired and the ratio's standard error (RatioSE) comes beside it.
	at := map[string]int{}
	for i, p := range paths {
		at[p.name] = i
	}
	for _, pair := range [][2]string{{"adapter", "floor"}, {"once", "floor-once"}} {
		if a, ok := at[pair[0]]; ok {
			if f, ok := at[pair[1]]; ok {
				b.ReportMetric(mean(lat[a])/mean(lat[f]), pair[0]+"/"+pair[1])
				b.ReportMetric(RatioSE(lat[a], lat[f]), pair[0]+"/"+pair[1]+"-se")
			}
		}
	}
}

// concurrentClients is the client count of BenchmarkHTTPConcurrent.
const concurrentClients = 50

// BenchmarkHTTPConcurrent: 50 concurrent clients, each with its own
// connection pool, cycling through the workload (search, query, fetch,
// both windows). Sub-benchmarks:
//
//	direct   direct RS requests only; one op is one call
//	adapter  tools/calls over the /mcp stack only; one op is one call
//	ratio    per op, 50 direct calls and 50 tools/calls (one per client
//	         and path, so every phase keeps all clients busy), run as phases
//	         alternating in rounds (direct, adapter, adapter, direct) in the
//	         same process; reports both paths' p50, p99 and calls/s and the
//	         p50 and wall-time ratios
func BenchmarkHTTPConcurrent(b *testing.B) {
	rsURL := startRS(b, nil)
	mcpURL := startAdapterHTTP(b, rsURL)
	work := Workload()
	directs := make([]func(int) error, concurrentClients)
	adapters := make([]func(int) error, concurrentClients)
	for i := range concurrentClients {
		dc := directClient(b, rsURL)
		mc := httpClient(b, mcpURL)
		directs[i] = func(op int) error { _, _, err := callDirect(dc, work[op%len(work)]); return err }
		adapters[i] = func(op int) error { _, err := callTool(mc, work[op%len(work)]); return err }
		// Warm each client's connection and the adapter's token check.
		for op := range work {
			if err := directs[i](op); err != nil {
				b.Fatal(err)
			}
			if err := adapters[i](op); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		lat, el := runConcurrent(b, b.N, directs)
		reportLoad(b, "", lat, el)
	})
	b.Run("adapter", func(b *testing.B) {
		b.ReportAllocs()
		lat, el := runConcurrent(b, b.N, adapters)
		reportLoad(b, "", lat, el)
	})
	b.Run("ratio", func(b *testing.B) {
		b.ReportAllocs()
		// Alternate the phases in rounds (direct, adapter, adapter, direct),
		// so a change in machine load during the run hits both alike.
		var d, a []time.Duration
		var dEl, aEl time.Duration
		// Each round keeps at least every client busy for one call.
		total, rounds := b.N*concurrentClients, min(concurrentRounds, b.N)
		for r := range rounds {
			n := total*(r+1)/rounds - total*r/rounds
			phases := []bool{r%2 == 0, r%2 != 0} // true: direct
			for _, isDirect := range phases {
				if isDirect {
					lat, el := runConcurrent(b, n, directs)
					d, dEl = append(d, lat...), dEl+el
				} else {
					lat, el := runConcurrent(b, n, adapters)
					a, aEl = append(a, lat...), aEl+el
				}
			}
		}
		reportLoad(b, "direct-", d, dEl)
		reportLoad(b, "adapter-", a, aEl)
		b.ReportMetric(float64(Percentile(a, 50))/float64(Percentile(d, 50)), "p50-ratio")
		b.ReportMetric(float64(aEl)/float64(dEl), "time-ratio")
	})
}

// concurrentRounds is how many alternating rounds the ratio sub-benchmark of
// BenchmarkHTTPConcurrent splits its calls into (fewer when b.N is smaller).
const concurrentRounds = 4

// runConcurrent makes n calls spread over the clients (one goroutine each)
// and returns every call's latency and the elapsed wall time.
func runConcurrent(b *testing.B, n int, clients []func(op int) error) ([]time.Duration, time.Duration) {
	var next atomic.Int64
	var failed atomic.Pointer[error]
	lats := make([][]time.Duration, len(clients))
	var wg sync.WaitGroup
	start := time.Now()
	for i, call := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				op := int(next.Add(1)) - 1
				if op >= n || failed.Load() != nil {
					return
				}
				t0 := time.Now()
				if err := call(op); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				lats[i] = append(lats[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return all, elapsed
}

func reportLoad(b *testing.B, prefix string, lat []time.Duration, elapsed time.Duration) {
	b.ReportMetric(float64(Percentile(lat, 50)), prefix+"p50-ns")
	b.ReportMetric(float64(Percentile(lat, 99)), prefix+"p99-ns")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), prefix+"calls/s")
}

// BenchmarkToolsList: the tools/list answer as sent on the wire (the
// JSON-RPC response mcp-go writes), for the read toolset (--toolsets read;
// target: at most 12 KiB) and for the default exposure (every toolset).
// Reports wire-bytes and the tool count.
func BenchmarkToolsList(b *testing.B) {
	rsURL := startRS(b, nil)
	for _, tc := range []struct {
		name     string
		toolsets []string
	}{
		{"read", []string{"read"}},
		{"default", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := newMCPServerWith(b, rsURL, fixedToken, pdpp.ServerOptions{Toolsets: tc.toolsets})
			ctx := context.Background()
			msg := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			var size, tools int
			b.ReportAllocs()
			for b.Loop() {
				resp := s.HandleMessage(ctx, msg)
				out, err := json.Marshal(resp)
				if err != nil {
					b.Fatal(err)
				}
				r, ok := resp.(mcp.JSONRPCResponse)
				if !ok {
					b.Fatalf("tools/list failed: %s", out)
				}
				lt, ok := r.Result.(mcp.ListToolsResult)
				if !ok {
					b.Fatalf("tools/list result is %T", r.Result)
				}
				size, tools = len(out), len(lt.Tools)
			}
			b.ReportMetric(float64(size), "wire-bytes")
			b.ReportMetric(float64(tools), "tools")
		})
	}
}

// BenchmarkServerCalls runs only the server half of each workload call (the
// stdio path: dispatch the raw JSON-RPC request, make the RS request, render,
// encode the reply), one sub-benchmark per call. `make profile` runs it with
// -cpuprofile and -memprofile so the profiles show the adapter's own work
// plus the demo RS it calls, without MCP client decoding.
func BenchmarkServerCalls(b *testing.B) {
	rsURL := startRS(b, nil)
	_, srv := inProcess(b, rsURL)
	for _, call := range Workload() {
		msg := toolCallMessage(b, call)
		b.Run(call.Name, func(b *testing.B) {
			if _, err := serveMessage(srv, msg); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := serveMessage(srv, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

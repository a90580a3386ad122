package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/credentials"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// options are the command-line settings.
type options struct {
	calls     int           // stdio calls, with RSS read at each quarter
	pairs     int           // HTTP one-client calls per path
	clients   int           // concurrent HTTP clients
	perClient int           // calls per concurrent client and path
	rounds    int           // alternating adapter/direct rounds of the load
	timeout   time.Duration // bound on the whole run
	callLimit time.Duration // bound on one call
	bin       string        // prebuilt server binary; empty: build one
	flood     floodOptions  // -flood: only the batch flood check
	floodOnly bool
	only      string // comma-separated workload call names; empty: all
	stdioRaw  bool   // also time the calls through a bare stdio client
	floor     bool   // also time the calls' pass-through floor over stdio
	fullcap   fullcapOptions
	fullOnly  bool // -fullcap: only the full-detail memory check
	hostile   hostileOptions
	hostOnly  bool // -hostile: only the decoded-size check
	fair      fairOptions
	fairOnly  bool // -fair: only the fairness check
	strangers strangersOptions
	strOnly   bool // -strangers: only the made-up bearer check
	connsOnly bool // -conns: only the connection floods of -strangers
	hidden    hiddenfullOptions
	hidOnly   bool // -hiddenfull: only the escaped full-detail check
}

func main() {
	var o options
	flag.IntVar(&o.calls, "calls", 1000, "stdio tool calls (mixed search/fetch/read_record_field); RSS is read at each quarter")
	flag.IntVar(&o.pairs, "pairs", 200, "HTTP single-client calls per path (adapter and direct, interleaved)")
	flag.IntVar(&o.clients, "clients", 50, "concurrent HTTP clients")
	flag.IntVar(&o.perClient, "per-client", 20, "calls per concurrent HTTP client, for each of adapter and direct")
	flag.IntVar(&o.rounds, "rounds", 2, "alternating adapter/direct rounds the concurrent calls are split into")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole run")
	flag.DurationVar(&o.callLimit, "call-timeout", 30*time.Second, "bound on one call")
	flag.StringVar(&o.only, "only", "", "measure only these workload calls, comma-separated (search, query, fetch, read_field, read_field_q); default all")
	flag.BoolVar(&o.stdioRaw, "stdio-raw", true, "also make every stdio call through a second child driven by a bare JSON-RPC client that decodes only id, error and isError (the raw path)")
	flag.BoolVar(&o.floor, "floor", true, "also make every stdio call's RS request through the floor: a pass-through MCP server (this program run again) that returns the RS body verbatim, driven by the same client(s) as the adapter")
	var floorRS, bareFloorRS, floodURL, connFloodAddr, connFloodShape string
	flag.StringVar(&connFloodAddr, connFloodChildFlag, "", "internal: hold the connections of -"+connFloodShapeFlag+" against this host:port until standard input closes, then exit")
	flag.StringVar(&connFloodShape, connFloodShapeFlag, "", "internal: networks,addresses,connections per address of the connection flood child")
	flag.StringVar(&floodURL, strangersFloodChildFlag, "", "internal: flood this /mcp URL with made-up bearers (-strangers-addrs x -strangers-per-addr) until standard input closes, print the answers by status, then exit")
	flag.StringVar(&floorRS, floorChildFlag, "", "internal: serve the floor over stdio against this RS URL, then exit")
	flag.StringVar(&bareFloorRS, bareFloorChildFlag, "", "internal: serve the bare floor (no MCP library) over stdio against this RS URL, then exit")
	flag.StringVar(&o.bin, "bin", "", "use this pdpp-mcp-server binary instead of building one")
	flag.BoolVar(&o.floodOnly, "flood", false, "run only the batch flood check: concurrent oversized JSON-RPC batches over HTTP; exits 1 when a bound is broken")
	flag.IntVar(&o.flood.clients, "flood-clients", 10, "concurrent batches of the flood check")
	flag.IntVar(&o.flood.items, "flood-items", 5000, "read_record_field calls per batch of the flood check")
	var maxMB int64
	flag.Int64Var(&maxMB, "flood-max-rss-mb", 100, "the server's peak RSS must stay below this many MB in the flood check")
	flag.BoolVar(&o.fullOnly, "fullcap", false, "run only the full-detail memory check over HTTP against a scripted RS of large pages: peak RSS under concurrent full and compact calls, RSS after settling, and the rise for one full fetch of a page-sized record; exits 1 when a bound is missed")
	flag.IntVar(&o.fullcap.records, "fullcap-records", 100, "records on the scripted page of the full-detail check")
	flag.IntVar(&o.fullcap.chars, "fullcap-chars", 78000, "characters of each record's text in the full-detail check")
	flag.IntVar(&o.fullcap.fulls, "fullcap-fulls", 8, "concurrent query_records calls at detail full in the full-detail check")
	flag.IntVar(&o.fullcap.compacts, "fullcap-compacts", 4, "concurrent compact query_records calls beside them")
	flag.DurationVar(&o.fullcap.settle, "fullcap-settle", time.Minute, "wait after the load before reading the settled RSS")
	flag.StringVar(&o.fullcap.ceilings, "fullcap-ceilings", "0,16777216", "comma-separated --full-max-bytes values to measure (0: the server's default)")
	flag.StringVar(&o.fullcap.fills, "fullcap-fills", "lt,html", "comma-separated text fills to measure: lt (every character <), html")
	flag.BoolVar(&o.hostOnly, "hostile", false, "run only the decoded-size check over HTTP against a scripted RS whose one record holds a field of millions of empty objects: peak RSS and CPU time of concurrent calls reading it; exits 1 when a bound is missed")
	flag.IntVar(&o.hostile.calls, "hostile-calls", 6, "concurrent calls of each tool in the decoded-size check")
	flag.IntVar(&o.hostile.elements, "hostile-elements", 2_600_000, "empty objects in the record's array (or members of its object) in the decoded-size check")
	flag.BoolVar(&o.hostile.members, "hostile-members", false, "an object of -hostile-elements members instead of an array")
	flag.StringVar(&o.hostile.tools, "hostile-tools", "query_records,fetch", "comma-separated tools of the decoded-size check, each measured in a fresh server")
	flag.BoolVar(&o.hidOnly, "hiddenfull", false, "run only the escaped full-detail check over HTTP without GOMEMLIMIT against a scripted RS whose one record is Unicode tag characters: peak RSS and CPU time of concurrent full fetches of it; exits 1 when a bound is missed")
	flag.IntVar(&o.hidden.calls, "hiddenfull-calls", 24, "concurrent full fetches in the escaped full-detail check")
	flag.IntVar(&o.hidden.bytes, "hiddenfull-bytes", 3_900_000, "bytes of the record's text of tag characters (a multiple of 4) in the escaped full-detail check")
	flag.StringVar(&o.hidden.ceilings, "hiddenfull-ceilings", "0", "comma-separated --full-max-bytes values of the escaped full-detail check (0: the server's default)")
	flag.BoolVar(&o.fairOnly, "fair", false, "run only the fairness check over HTTP at default flags: one token's concurrent batches of full calls, then its full calls looping on many connections, each beside another token's small searches; exits 1 when a bound is missed")
	flag.BoolVar(&o.strOnly, "strangers", false, "run only the made-up bearer check over HTTP at default flags: many addresses send calls with fresh made-up bearers that the RS takes long to reject, beside a token with a cached verdict whose searches are timed idle and under the flood; exits 1 when a bound is missed")
	flag.BoolVar(&o.connsOnly, "conns", false, "run only the connection floods of -strangers: held kept-alive connections from many networks, or one address, beside a verified token on new connections, and the memory of idle connections; exits 1 when an aim is missed")
	flag.IntVar(&o.strangers.addrs, "strangers-addrs", 100, "source addresses of the flood (loopback)")
	flag.IntVar(&o.strangers.perAddr, "strangers-per-addr", 400, "goroutines per address, over at most 64 connections each")
	flag.DurationVar(&o.strangers.reject, "strangers-reject", time.Second, "how long the RS takes to reject a made-up bearer")
	flag.IntVar(&o.strangers.calls, "strangers-calls", 100, "the verified token's searches, idle and under the flood")
	flag.Float64Var(&o.strangers.minRatio, "strangers-min-answered", 0.99, "least share of its searches answered under the flood")
	flag.Float64Var(&o.strangers.maxSlow, "strangers-max-slowdown", 2, "bound on its p95 under the flood over its idle p95")
	flag.IntVar(&o.fair.batches, "fair-batches", 4, "concurrent batches of full calls in the fairness check")
	flag.IntVar(&o.fair.items, "fair-items", 16, "full calls per batch in the fairness check")
	flag.IntVar(&o.fair.loopConns, "fair-conns", 24, "connections looping full calls in the fairness check")
	flag.IntVar(&o.fair.searches, "fair-searches", 20, "the other token's searches beside the loop")
	flag.DurationVar(&o.fair.maxSearch, "fair-max-search", 2*time.Second, "bound on the other token's search beside the batches")
	flag.DurationVar(&o.fair.maxP95, "fair-max-p95", 750*time.Millisecond, "bound on the p95 of its searches beside the loop")
	flag.Parse()
	if checksChild != "" || floodURL != "" || connFloodAddr != "" {
		// A flood child's connections are refused as the server sees fit
		// (a 503 before any request is read), each logged by net/http's
		// client on its standard logger (about 12,000 lines a -strangers
		// run), none of which the measurement reads.
		log.SetOutput(io.Discard)
	}
	switch {
	case checksChild != "":
		os.Exit(runChecksChild())
	case floodURL != "":
		os.Exit(runFloodChild(floodURL, o.strangers.addrs, o.strangers.perAddr))
	case connFloodAddr != "":
		os.Exit(runConnFloodChild(connFloodAddr, connFloodShape))
	case bareFloorRS != "":
		os.Exit(floorExit("", serveBareFloor(context.Background(), bareFloorRS, os.Stdin, os.Stdout)))
	case floorRS != "":
		os.Exit(floorExit("floor: ", serveFloor(context.Background(), floorRS)))
	}
	o.flood.maxRSS = maxMB * 1e6
	if o.calls < 4 || o.pairs < 4 || o.clients < 1 || o.rounds < 1 || o.perClient < o.rounds {
		fmt.Fprintln(os.Stderr, "benchrss: -calls and -pairs must be at least 4, -clients and -rounds at least 1, -per-client at least -rounds")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	bin, cleanup, err := serverBinary(ctx, log, o.bin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: %v\n", err)
		os.Exit(1)
	}
	code := runMode(ctx, log, bin, o)
	cleanup()
	os.Exit(code)
}

// floorExit is a floor child's exit code: 1 after printing prefix and err.
func floorExit(prefix string, err error) int {
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: %s%v\n", prefix, err)
		return 1
	}
	return 0
}

// runMode runs what the flags ask for: the exit code (1: failed or missed a bound).
func runMode(ctx context.Context, log *slog.Logger, bin string, o options) int {
	switch {
	case o.floodOnly:
		res, err := flood(ctx, bin, o.flood)
		return exitCode("flood", res, err)
	case o.hostOnly:
		res, err := hostile(ctx, bin, o.hostile)
		return exitCode("hostile", res, err)
	case o.connsOnly:
		return runConnFloods(ctx, bin)
	case o.strOnly:
		// The cached token's check and connection floods unless -checks-only.
		code := 0
		if !checksOnly {
			res, err := strangers(ctx, bin, o.strangers)
			code = exitCode("strangers", res, err)
		}
		code = max(code, runTokenChecks(ctx, bin, checksOpt))
		if !checksOnly {
			code = max(code, runConnFloods(ctx, bin))
		}
		return code
	case o.hidOnly:
		res, err := hiddenfull(ctx, bin, o.hidden)
		return exitCode("hiddenfull", res, err)
	case o.fairOnly:
		res, err := fair(ctx, bin, o.fair)
		return exitCode("fair", res, err)
	case o.fullOnly:
		res, err := fullcap(ctx, bin, o.fullcap)
		return exitCode("fullcap", res, err)
	}
	rep, err := run(ctx, log, bin, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: %v\n", err)
		return 1
	}
	rep.write(os.Stdout)
	return 0
}

// serverBinary returns bin, or builds the module's server in a temporary directory cleanup removes.
func serverBinary(ctx context.Context, log *slog.Logger, bin string) (string, func(), error) {
	if bin != "" {
		return bin, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "pdpp-benchrss-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	switch {
	case err != nil:
		err = fmt.Errorf("go env GOMOD: %w", err)
	case mod == "" || mod == os.DevNull:
		err = errors.New("run benchrss from inside the pdpp-mcp module")
	default:
		bin = filepath.Join(tmp, "pdpp-mcp-server")
		log.Info("building the server", "module", filepath.Dir(mod))
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/pdpp-mcp-server")
		cmd.Dir, cmd.Stdout, cmd.Stderr = filepath.Dir(mod), os.Stderr, os.Stderr
		if err = cmd.Run(); err != nil {
			err = fmt.Errorf("go build ./cmd/pdpp-mcp-server: %w", err)
		}
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return bin, cleanup, nil
}

func run(ctx context.Context, log *slog.Logger, bin string, o options) (*report, error) {
	tmp, err := os.MkdirTemp("", "pdpp-benchrss-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rsURL, stopRS, err := serveDemoRS(nil)
	if err != nil {
		return nil, err
	}
	defer stopRS()
	cacheRoot := filepath.Join(tmp, "cache")
	if _, err := credentials.Write(cacheRoot, credentials.File{
		ProviderURL: rsURL,
		Credential:  credentials.Credential{AccessToken: benchmarks.ClientToken, TokenType: "Bearer", GrantID: "grt_demo_client"},
	}); err != nil {
		return nil, fmt.Errorf("writing the credential: %w", err)
	}
	work, err := selectWork(benchmarks.Workload(), o.only)
	if err != nil {
		return nil, err
	}
	m := &meter{opt: o, work: work, rsURL: rsURL}
	m.direct, err = benchmarks.NewDirectClient(rsURL, benchmarks.ClientToken, benchmarks.NewHTTPClient())
	if err != nil {
		return nil, err
	}
	rep := &report{opt: o, work: m.work, loadBefore: loadAverage()}
	log.Info("stdio: cold start and calls", "calls", o.calls)
	if err := m.stdio(ctx, bin, cacheRoot, &rep.stdio); err != nil {
		return nil, fmt.Errorf("stdio: %w", err)
	}
	log.Info("http: cold start, one client, then concurrent clients", "pairs", o.pairs, "clients", o.clients, "per_client", o.perClient)
	if err := m.http(ctx, bin, &rep.http); err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	rep.loadAfter = loadAverage()
	return rep, nil
}

// meter drives the child process and the direct RS client.
type meter struct {
	opt    options
	work   []benchmarks.Call
	rsURL  string
	direct *rsclient.ClientWithResponses
}

// latencies are call times by path and tool (raw: the bare client's).
type latencies struct {
	adapter, direct, raw, floor, rawFloor, bareFloor map[string][]time.Duration
}

func newLatencies() latencies {
	return latencies{adapter: map[string][]time.Duration{}, direct: map[string][]time.Duration{}, raw: map[string][]time.Duration{},
		floor: map[string][]time.Duration{}, rawFloor: map[string][]time.Duration{}, bareFloor: map[string][]time.Duration{}}
}

type stdioResult struct {
	protocol   string // revision the mcp-go client negotiated
	coldStart  time.Duration
	childCPU   map[string]time.Duration // child CPU time spent per tool
	idle       memory
	checkpoint []int
	mem        []memory
	lat        latencies
}

type httpResult struct {
	listen, coldStart time.Duration
	idle, afterLoad   memory
	loadPeak          int64
	loadCPU           time.Duration // child CPU time during the concurrent load
	lat               latencies
	load              struct {
		adapter, direct               []time.Duration
		adapterElapsed, directElapsed time.Duration
	}
}

func (m *meter) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, m.opt.callLimit)
}

// timed makes call under the bound on one call and returns how long it took.
func (m *meter) timed(ctx context.Context, call func(context.Context) error) (time.Duration, error) {
	ctx, cancel := m.callCtx(ctx)
	defer cancel()
	start := time.Now()
	err := call(ctx)
	return time.Since(start), err
}

// stdioPath is a client and child of the stdio calls, timed into into.
type stdioPath struct {
	into map[string][]time.Duration
	via  func(i int, call benchmarks.Call) func(context.Context) error
}

// step returns call as an interleaved step timed into into[name].
func (m *meter) step(ctx context.Context, into map[string][]time.Duration, name string, call func(context.Context) error) func() error {
	return func() error {
		d, err := m.timed(ctx, call)
		into[name] = append(into[name], d)
		return err
	}
}

// viaMCP is call made through the mcp-go client c; prefix starts its errors.
func viaMCP(c *client.Client, prefix string, call benchmarks.Call) func(context.Context) error {
	return func(ctx context.Context) error {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = call.Tool, call.Args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return fmt.Errorf("%s%s: %w", prefix, call.Name, err)
		}
		if res.IsError {
			return fmt.Errorf("%s%s: tool error", prefix, call.Name)
		}
		return nil
	}
}

// viaRS is the direct RS request of call through c.
func viaRS(c *rsclient.ClientWithResponses, call benchmarks.Call) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, _, err := call.Direct(ctx, c); err != nil {
			return fmt.Errorf("%s direct: %w", call.Name, err)
		}
		return nil
	}
}

// viaRaw is the tools/call of params through the bare client of c (path: its name).
func viaRaw(c *rawChild, path string, call benchmarks.Call, params []byte) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := c.callTool(ctx, params); err != nil {
			return fmt.Errorf("%s %s: %w", call.Name, path, c.wrap(err))
		}
		return nil
	}
}

// interleave runs steps, rotated by one place every len(m.work) calls so each
// takes each position in turn (with two steps: alternating which goes first).
func (m *meter) interleave(i int, steps ...func() error) error {
	k := (i / len(m.work)) % len(steps)
	for j := range steps { // bounded by len(steps)
		if err := steps[(j+k)%len(steps)](); err != nil {
			return err
		}
	}
	return nil
}

// initialize makes the mcp-go client's handshake; it returns the revision.
func initialize(ctx context.Context, c *client.Client) (string, error) {
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "benchrss", Version: "0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		return "", err
	}
	return res.ProtocolVersion, nil
}

// stdio times the server's spawn over stdio to its initialize reply, then
// makes the calls, reading its memory at each quarter, interleaved with each
// other path (-stdio-raw: a twin child with the bare client; -floor).
func (m *meter) stdio(ctx context.Context, bin, cacheRoot string, out *stdioResult) error {
	args := []string{"stdio", "--provider-url", m.rsURL, "--cache-root", cacheRoot}
	var cmd *exec.Cmd
	spawn := func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
		cmd = exec.CommandContext(ctx, command, args...)
		cmd.Env = append(os.Environ(), env...)
		return cmd, nil
	}
	start := time.Now()
	c, err := client.NewStdioMCPClientWithOptions(bin, nil, args,
		mcptransport.WithCommandFunc(spawn))
	if err != nil {
		return err
	}
	defer c.Close()
	ictx, cancel := m.callCtx(ctx)
	out.protocol, err = initialize(ictx, c)
	cancel()
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	out.coldStart = time.Since(start)
	pid := cmd.Process.Pid
	if out.idle, err = readMemory(pid); err != nil {
		return err
	}
	out.lat = newLatencies()
	paths := []stdioPath{
		{out.lat.adapter, func(_ int, call benchmarks.Call) func(context.Context) error { return viaMCP(c, "", call) }},
		{out.lat.direct, func(_ int, call benchmarks.Call) func(context.Context) error { return viaRS(m.direct, call) }},
	}
	// The raw child starts after the first child's cold start and idle
	// memory are read, so it disturbs neither.
	if m.opt.stdioRaw {
		raw, err := m.startRawChild(ctx, "raw stdio child", bin, args)
		if err != nil {
			return err
		}
		defer raw.close()
		params := toolParams(m.work, func(c benchmarks.Call) string { return c.Tool })
		paths = append(paths, stdioPath{out.lat.raw, func(i int, call benchmarks.Call) func(context.Context) error {
			return viaRaw(raw, "raw", call, params[i%len(m.work)])
		}})
	}
	if m.opt.floor {
		floors, closeFloors, err := m.startFloors(ctx, out.lat)
		if err != nil {
			return err
		}
		defer closeFloors()
		paths = append(paths, floors...)
	}
	out.childCPU = map[string]time.Duration{}
	n := m.opt.calls
	out.checkpoint = []int{n / 4, n / 2, n * 3 / 4, n} // distinct: n >= 4
	// The child is idle between calls, so the CPU it used from one call's
	// start to the next one's belongs to the first.
	cpu, err := readCPU(pid)
	if err != nil {
		return err
	}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped after %d calls: %w", i, err)
		}
		call := m.work[i%len(m.work)]
		steps := make([]func() error, len(paths))
		for j, p := range paths {
			steps[j] = m.step(ctx, p.into, call.Name, p.via(i, call))
		}
		if err := m.interleave(i, steps...); err != nil {
			return err
		}
		now, err := readCPU(pid)
		if err != nil {
			return err
		}
		out.childCPU[call.Name] += now - cpu
		cpu = now
		if i+1 == out.checkpoint[len(out.mem)] {
			mem, err := readMemory(pid)
			if err != nil {
				return err
			}
			out.mem = append(out.mem, mem)
		}
	}
	return nil
}

// toolParams encodes each workload call's tools/call params, for tool(call).
func toolParams(work []benchmarks.Call, tool func(benchmarks.Call) string) [][]byte {
	params := make([][]byte, len(work))
	for i, call := range work {
		params[i], _ = json.Marshal(map[string]any{"name": tool(call), "arguments": call.Args})
	}
	return params
}

// http times the server's start in HTTP mode to its listen log line and
// first initialize reply, then runs the one-client pairs and the load.
func (m *meter) http(ctx context.Context, bin string, out *httpResult) error {
	start := time.Now()
	child, err := startChild(ctx, bin, m.rsURL)
	if err != nil {
		return err
	}
	defer child.stop()
	out.listen = time.Since(start)
	mcpURL := "http://" + child.addr + "/mcp"
	first, err := m.httpClient(ctx, mcpURL)
	if err != nil {
		return err
	}
	defer first.Close()
	out.coldStart = time.Since(start)
	pid := child.cmd.Process.Pid
	if out.idle, err = readMemory(pid); err != nil {
		return err
	}

	// One client: adapter and direct, alternating which goes first.
	out.lat = newLatencies()
	for i := range m.opt.pairs {
		if err := ctx.Err(); err != nil {
			return err
		}
		call := m.work[i%len(m.work)]
		if err := m.interleave(i, m.step(ctx, out.lat.adapter, call.Name, viaMCP(first, "", call)),
			m.step(ctx, out.lat.direct, call.Name, viaRS(m.direct, call))); err != nil {
			return err
		}
	}

	clients := make([]*client.Client, m.opt.clients)
	directs := make([]*rsclient.ClientWithResponses, m.opt.clients)
	for i := range clients {
		if clients[i], err = m.httpClient(ctx, mcpURL); err != nil {
			return err
		}
		defer clients[i].Close()
		if directs[i], err = benchmarks.NewDirectClient(m.rsURL, benchmarks.ClientToken, benchmarks.NewHTTPClient()); err != nil {
			return err
		}
	}
	cpuBefore, err := readCPU(pid)
	if err != nil {
		return err
	}
	sampling, stop := context.WithCancel(ctx)
	var peak int64
	var sampler sync.WaitGroup
	sampler.Go(func() { // a reading every 50 ms until stop
		for ; sampling.Err() == nil; sleepCtx(sampling, 50*time.Millisecond) {
			if mem, err := readMemory(pid); err == nil {
				peak = max(peak, mem.RSS)
			}
		}
	})
	// Alternate adapter and direct phases in rounds (adapter, direct,
	// direct, adapter, ...) so a change in machine load hits both alike.
	loadErr := func() error {
		for r := range m.opt.rounds {
			per := m.opt.perClient*(r+1)/m.opt.rounds - m.opt.perClient*r/m.opt.rounds
			for _, adapterPhase := range []bool{r%2 == 0, r%2 != 0} {
				lat, el := &out.load.direct, &out.load.directElapsed
				via := func(i int, call benchmarks.Call) func(context.Context) error { return viaRS(directs[i], call) }
				if adapterPhase {
					lat, el = &out.load.adapter, &out.load.adapterElapsed
					via = func(i int, call benchmarks.Call) func(context.Context) error { return viaMCP(clients[i], "", call) }
				}
				l, d, err := m.concurrent(ctx, per, via)
				if *lat, *el = append(*lat, l...), *el+d; err != nil {
					return err
				}
			}
		}
		return nil
	}()
	stop()
	sampler.Wait()
	out.loadPeak = peak
	if loadErr != nil {
		return loadErr
	}
	if out.afterLoad, err = readMemory(pid); err != nil {
		return err
	}
	cpuAfter, err := readCPU(pid)
	out.loadCPU = cpuAfter - cpuBefore
	return err
}

func (m *meter) httpClient(ctx context.Context, mcpURL string) (*client.Client, error) {
	c, err := client.NewStreamableHttpClient(mcpURL,
		mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + benchmarks.ClientToken}),
		mcptransport.WithHTTPBasicClient(benchmarks.NewHTTPClient()))
	if err != nil {
		return nil, err
	}
	ictx, cancel := m.callCtx(ctx)
	defer cancel()
	if err := c.Start(ictx); err != nil {
		return nil, err
	}
	if _, err := initialize(ictx, c); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

// concurrent runs opt.clients goroutines of per timed calls through via
// (client i from workload call i on): all latencies and the wall time.
func (m *meter) concurrent(ctx context.Context, per int, via func(client int, c benchmarks.Call) func(context.Context) error) ([]time.Duration, time.Duration, error) {
	lats := make([][]time.Duration, m.opt.clients)
	errs := make([]error, m.opt.clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range m.opt.clients {
		wg.Go(func() {
			for k := range per {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					return
				}
				d, err := m.timed(ctx, via(i, m.work[(i+k)%len(m.work)]))
				if err != nil {
					errs[i] = err
					return
				}
				lats[i] = append(lats[i], d)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	return slices.Concat(lats...), elapsed, errors.Join(errs...)
}

// stopChild interrupts the child, waits 5 s for exited (its Wait), then kills it.
func stopChild(cmd *exec.Cmd, exited <-chan error) {
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// selectWork keeps the calls named in only (comma-separated; empty: all) in order.
func selectWork(all []benchmarks.Call, only string) ([]benchmarks.Call, error) {
	if only == "" {
		return all, nil
	}
	want := strings.Split(only, ",")
	for i, n := range want {
		want[i] = strings.TrimSpace(n)
		if !slices.ContainsFunc(all, func(c benchmarks.Call) bool { return c.Name == want[i] }) {
			return nil, fmt.Errorf("-only: no workload call %q", want[i])
		}
	}
	return slices.DeleteFunc(slices.Clone(all), func(c benchmarks.Call) bool { return !slices.Contains(want, c.Name) }), nil
}

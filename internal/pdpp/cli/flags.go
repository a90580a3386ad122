package cli

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/tokencheck"
)

// common holds the flags every serving command shares.
type common struct {
	providerURL   string
	serverName    string
	toolsets      string
	rsTimeout     time.Duration
	rsObserve     func(method, route, status string, d time.Duration) // RS metrics hook, nil when off
	budgetMetrics *metrics.Metrics                                    // bytes-in-flight metrics, nil when off
	// allowPrivateWebhooks lets webhook callbacks name internal hosts
	// (--allow-private-webhooks; see pdpp.Config.AllowPrivateWebhooks).
	allowPrivateWebhooks bool
	// unavailable, when set, serves without a credential: see
	// pdpp.ServerOptions.Unavailable (stdio without --fail-fast).
	unavailable *pdpp.Unavailable
	fullMax     int64 // --full-max-bytes; 0 on commands without it: the default
	inFlightMax int64 // --max-inflight-bytes; 0 on commands without it: the default
	// budget watches the bytes-in-flight budget of the server buildServer
	// built last, for readiness (see budgetWatch).
	budget *budgetWatch
}

// register defines every common flag (the serving commands stdio and http).
func (c *common) register(f *cmdkit.FlagSet) error {
	c.registerProvider(f)
	return c.registerServing(f, false)
}

// registerServing defines the flags of an MCP server offered to clients:
// --server-name, --toolsets, --allow-private-webhooks (default
// privateWebhooks, which only the demo turns on; the environment variable
// overrides either default), --full-max-bytes, --max-inflight-bytes and
// --rs-timeout.
func (c *common) registerServing(f *cmdkit.FlagSet, privateWebhooks bool) error {
	f.Str(&c.serverName, "server-name", "PDPP_MCP_SERVER_NAME", mcptools.ServerName, "server `name` reported to MCP clients")
	f.Str(&c.toolsets, "toolsets", "PDPP_MCP_TOOLSETS", strings.Join(mcptools.Toolsets(), ","), "comma-separated `list` of toolsets to expose ("+strings.Join(mcptools.Toolsets(), ", ")+")")
	const usage = "for local development: accept webhook callback URLs on loopback, private, link-local and metadata hosts (and http on loopback); off, only https to a public host is sent to the RS"
	if err := f.Bool(&c.allowPrivateWebhooks, "allow-private-webhooks", "PDPP_MCP_ALLOW_PRIVATE_WEBHOOKS", privateWebhooks, usage); err != nil {
		return err
	}
	if err := f.Int64(&c.fullMax, "full-max-bytes", "PDPP_MCP_FULL_MAX_BYTES", pdpp.DefaultFullMaxBytes,
		`ceiling of one detail "full" reply; past it the call is refused with full_too_large and the bounded ways to read the same data`); err != nil {
		return err
	}
	if err := f.Int64(&c.inFlightMax, "max-inflight-bytes", "PDPP_MCP_MAX_INFLIGHT_BYTES", rs.DefaultMaxInFlightBytes,
		"bytes all calls may hold at once for RS bodies and the replies built from them; a call that finds no room waits within its budget, then fails with server_busy"); err != nil {
		return err
	}
	return c.registerTimeout(f)
}

// After the bytes in flight peaked at idleFreePeak or more, the server
// gives freed memory back to the system once they fall to zero, at most
// once every idleFreeEvery (see inflight.FreeWhenIdle): ordinary calls
// never trigger it, and under sustained large calls it costs one
// collection per window.
const (
	idleFreePeak  = 8 << 20
	idleFreeEvery = 10 * time.Second
)

// Terms of WorstCaseHeap (docs/deploy.md gives the formula): heapBase is
// what a serving process holds with no call (runtime, token-verdict cache,
// metrics); maxCompactReply the largest compact reply budget of the
// catalog; MemoryHeadroom what the process holds outside the Go heap
// (mapped binary, thread stacks, runtime metadata), to leave between
// GOMEMLIMIT and the container's memory limit.
const (
	heapBase        = 10 << 20
	maxCompactReply = 32 << 10
	MemoryHeadroom  = 32 << 20
)

// WorstCaseHeap bounds the Go heap of a server with these flags: heapBase;
// twice --max-inflight-bytes (the RS bodies and full-reply members the
// limiter admits, and what rendering decodes from them); and for each of
// --max-concurrent-requests, its request body twice (read, then parsed)
// a compact reply three times (the encoded result, the encoded message,
// the transport's buffer), and the answers a batch gathers before it
// streams (transport.BatchHeldBytes); and for each of --max-conns, an open
// connection (transport.ConnBytes: its goroutine and buffers, held while
// it waits for its next request whoever opened it). Set GOMEMLIMIT at or
// above it, and the container limit MemoryHeadroom above that.
func WorstCaseHeap(inFlight, maxConcurrent, maxBody, maxConns int64) int64 {
	return heapBase + 2*inFlight + maxConcurrent*(2*maxBody+3*maxCompactReply+transport.BatchHeldBytes) + maxConns*transport.ConnBytes
}

// memoryLimits checks --full-max-bytes and --max-inflight-bytes (zero:
// the defaults) and returns them: the ceiling at least
// pdpp.MinFullMaxBytes, and the bound on bytes in flight room enough for
// the largest single body a call may read (an RS body of
// rs.DefaultMaxBodySize, or a full reply's body) and for a full reply's
// body beside its escaped copy (twice the ceiling).
func (c *common) memoryLimits() (fullMax, inFlight int64, err error) {
	fullMax, inFlight = cmp.Or(c.fullMax, pdpp.DefaultFullMaxBytes), cmp.Or(c.inFlightMax, rs.DefaultMaxInFlightBytes)
	if fullMax < pdpp.MinFullMaxBytes {
		return 0, 0, cmdkit.Fail(cmdkit.ExitUsage, "--full-max-bytes must be at least %d (a full reply is never smaller than a compact one), got %d", pdpp.MinFullMaxBytes, fullMax)
	}
	// A full reply whose data holds hidden characters holds its body and
	// the body's escaped copy, each at most the ceiling, at once.
	if need := max(fullMax+pdpp.FullBodyMargin, 2*fullMax, rs.DefaultMaxBodySize) + 1; inFlight < need {
		return 0, 0, cmdkit.Fail(cmdkit.ExitUsage, "--max-inflight-bytes must hold the largest body one call reads and the escaped copy of a full reply (%d bytes with --full-max-bytes %d), got %d", need, fullMax, inFlight)
	}
	return fullMax, inFlight, nil
}

// registerProvider defines --provider-url.
func (c *common) registerProvider(f *cmdkit.FlagSet) {
	f.Str(&c.providerURL, "provider-url", "PDPP_PROVIDER_URL", "", "PDPP resource server `URL`, e.g. http://127.0.0.1:7663")
}

// registerTimeout defines --rs-timeout.
func (c *common) registerTimeout(f *cmdkit.FlagSet) error {
	return f.Dur(&c.rsTimeout, "rs-timeout", "PDPP_RS_TIMEOUT", rs.DefaultTimeout, "budget of one tool call or resource read across all of its RS requests (token check, expand check, data)")
}

// toolsetList validates --toolsets against the catalog.
func (c *common) toolsetList() ([]string, error) {
	var out []string
	for _, t := range strings.Split(c.toolsets, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if !slices.Contains(mcptools.Toolsets(), t) {
			return nil, cmdkit.Fail(cmdkit.ExitUsage, "unknown toolset %q in --toolsets; known: %s", t, strings.Join(mcptools.Toolsets(), ", "))
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, cmdkit.Fail(cmdkit.ExitUsage, "--toolsets names no toolset; known: %s", strings.Join(mcptools.Toolsets(), ", "))
	}
	return out, nil
}

// requireProvider checks --provider-url.
func (c *common) requireProvider() error {
	if c.providerURL == "" {
		return cmdkit.Fail(cmdkit.ExitUsage, "--provider-url (or PDPP_PROVIDER_URL) is required, e.g. --provider-url http://127.0.0.1:7663")
	}
	if _, err := rs.ParseProviderURL(c.providerURL); err != nil {
		return cmdkit.Fail(cmdkit.ExitUsage, "%v", err)
	}
	return nil
}

// buildServer wires the adapter over an RS client with the given token
// source; wire, when given, adjusts the adapter's Config.
func (c *common) buildServer(log *slog.Logger, token rs.TokenSource, wire ...func(*pdpp.Config)) (*server.MCPServer, *rs.Client, error) {
	sets, err := c.toolsetList()
	if err != nil {
		return nil, nil, err
	}
	fullMax, inFlight, err := c.memoryLimits()
	if err != nil {
		return nil, nil, err
	}
	lim := inflight.New(inFlight)
	lim.OnIdle(inflight.FreeWhenIdle(idleFreePeak, idleFreeEvery, nil))
	c.budget = &budgetWatch{}
	if m := c.budgetMetrics; m != nil {
		c.budget.next = m
		m.WatchBudget(lim.Held, lim.Max())
	}
	lim.Observe(c.budget)
	opts := rs.Options{Timeout: c.rsTimeout, Observe: c.rsObserve, InFlight: lim}
	client, err := rs.New(c.providerURL, token, opts)
	if err != nil {
		return nil, nil, cmdkit.Fail(cmdkit.ExitUsage, "%v", err)
	}
	// Token checks read the RS through connections of their own
	// (tokencheck.MaxCheckConns) under a deadline of their own, so made-up
	// bearers can never take, nor wait for, the connections data calls use.
	opts.MaxConns = tokencheck.MaxCheckConns
	checkClient, _ := rs.New(c.providerURL, token, opts) // the same URL and token were just accepted
	cfg := pdpp.Config{RS: client, Token: token, Logger: log, FullMaxBytes: fullMax,
		Checker:              tokencheck.New(checkClient, token, tokencheck.Options{Timeout: min(c.rsTimeout, tokencheck.DefaultTimeout)}),
		AllowPrivateWebhooks: c.allowPrivateWebhooks}
	for _, w := range wire {
		w(&cfg)
	}
	a := pdpp.New(cfg)
	return pdpp.NewServer(a, pdpp.ServerOptions{Name: c.serverName, Version: version(), Toolsets: sets, CallTimeout: c.rsTimeout,
		Unavailable: c.unavailable}), client, nil
}

// budgetStarvedFor is how long after a call was refused bytes of the budget
// for its whole deadline (inflight.RefusedDeadline) the replica reports
// itself not ready: verified work has exhausted its memory budget, so a
// load balancer should send new work to other replicas meanwhile. Only
// calls of verified tokens hold budget bytes, so no stranger can cause it.
const budgetStarvedFor = 5 * time.Second

// budgetWatch observes the bytes-in-flight budget (inflight.Observer): it
// notes when a reservation was last refused for its deadline, and passes
// every observation on to next (the metrics), when set.
type budgetWatch struct {
	next    inflight.Observer
	starved atomic.Int64 // unix nanoseconds of the last deadline refusal; 0: never
}

func (b *budgetWatch) BudgetWait(d time.Duration) {
	if b.next != nil {
		b.next.BudgetWait(d)
	}
}

func (b *budgetWatch) BudgetRefused(reason string) {
	if reason == inflight.RefusedDeadline {
		b.starved.Store(time.Now().UnixNano())
	}
	if b.next != nil {
		b.next.BudgetRefused(reason)
	}
}

// errBudgetStarved is the readiness failure of a replica whose budget
// refused a call for its deadline within budgetStarvedFor.
var errBudgetStarved = errors.New("the bytes-in-flight budget (--max-inflight-bytes) refused a call for want of room within the last seconds: memory budget exhausted by verified work")

// ready reports errBudgetStarved within budgetStarvedFor of a deadline
// refusal; nil otherwise, and for a nil watch.
func (b *budgetWatch) ready() error {
	if b == nil {
		return nil
	}
	if at := b.starved.Load(); at != 0 && time.Since(time.Unix(0, at)) < budgetStarvedFor {
		return errBudgetStarved
	}
	return nil
}

// withBudget is a ReadyCheck that fails while the budget is starved (see
// budgetWatch.ready), and otherwise asks next.
func withBudget(b *budgetWatch, next func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := b.ready(); err != nil {
			return err
		}
		return next(ctx)
	}
}

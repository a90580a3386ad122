package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
)

// Defaults applied by HTTPConfig when a field is left at its zero value.
const (
	DefaultListen            = "127.0.0.1:8787"
	DefaultMaxBodyBytes      = int64(1 << 20)
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultReadyTimeout      = 5 * time.Second
)

// Defaults of the per-request bounds; see HTTPConfig.MaxBatchItems and the
// fields after it.
const (
	DefaultMaxBatchItems  = 16
	DefaultMaxReplyBytes  = int64(16 << 20)
	DefaultRequestTimeout = 60 * time.Second
	// DefaultMaxConcurrentRequests caps the /mcp requests one server serves
	// at once. The load test in docs/deploy.md runs 50 concurrent clients
	// (against three replicas): even all 50 on one replica stay far below
	// 256, while a burst of thousands of POSTs holds at most 256 request
	// bodies (up to MaxBodyBytes each), replies (up to MaxReplyBytes) and
	// call goroutines in memory at once.
	DefaultMaxConcurrentRequests = 256
	// DefaultBodyReadTimeout is how long a request body may take to arrive
	// once its headers have: a JSON-RPC body is at most MaxBodyBytes (1 MiB
	// by default), which 10 s carries over a link of 1 Mbit/s.
	DefaultBodyReadTimeout = 10 * time.Second
	// DefaultMaxBodyReaders caps the requests reading their bodies at once,
	// DefaultMaxBodyReadersPerClient those of one client address. A reader
	// holds what its peer sent (at most MaxBodyBytes): 128 hold at most 128
	// MiB at the default bound, only when 128 peers each send nearly 1 MiB
	// and stall; 16 per address leave the other 112 to everyone else.
	DefaultMaxBodyReaders          = 128
	DefaultMaxBodyReadersPerClient = 16
	// DefaultMaxBodyReadersPerPrefix caps the reading places of one
	// address prefix (IPv4 /24, IPv6 /64): peers spread over one network
	// take at most a quarter of the places.
	DefaultMaxBodyReadersPerPrefix = 32
	// DefaultMinBodyRate is the slowest average rate of a request body, in
	// bytes a second, once bodyRateGrace has passed: a peer that sends a few
	// bytes and stalls holds its reading place about a second, not the whole
	// BodyReadTimeout, while a 1 MiB body has 1,000 s at that rate.
	DefaultMinBodyRate = 1024
	// What each derived bound adds to the one inside it (request deadline
	// to call budget, write timeout to request deadline, shutdown grace to
	// write timeout), so a call that runs out of time is still answered
	// with a typed error.
	requestSlack  = 5 * time.Second
	writeSlack    = 10 * time.Second
	shutdownSlack = 5 * time.Second
)

// firstStreamableVersion is the revision that introduced Streamable HTTP; the
// transport assumes it when a POST carries no MCP-Protocol-Version header.
const firstStreamableVersion = mcp.ProtocolVersion20250326

// DefaultProtocolVersions returns the MCP revisions served over HTTP when
// HTTPConfig.ProtocolVersions is empty, newest first. 2026-07-28 is included
// because mcp-go serves that stateless revision without any session state.
func DefaultProtocolVersions() []string {
	return []string{
		mcp.ProtocolVersion20260728,
		mcp.ProtocolVersion20251125,
		mcp.ProtocolVersion20250618,
		mcp.ProtocolVersion20250326,
	}
}

// HTTPConfig configures the hosted Streamable HTTP server. Each field maps to
// one command-line flag; the zero value of every field means its default.
type HTTPConfig struct {
	// Listen is the TCP address to bind (flag --listen). Default
	// 127.0.0.1:8787. ":0" picks a free port; see OnListen.
	Listen string
	// PublicBaseURL is the externally visible origin (and optional path
	// prefix), e.g. https://mcp.example.com, behind a proxy (flag
	// --public-base-url); the resource identifier is PublicBaseURL+"/mcp".
	// Empty: derived from each request's Host.
	PublicBaseURL string
	// AllowedOrigins lists the browser origins (scheme://host[:port]) that
	// may call /mcp (flag --allowed-origins, comma separated). A request
	// whose Origin header is present and not listed gets 403; a request
	// without Origin is allowed.
	AllowedOrigins []string
	// CORS answers preflight OPTIONS requests and adds CORS response headers
	// for the allowed origins (flag --cors). It requires AllowedOrigins.
	CORS bool
	// MaxBodyBytes bounds a request body (flag --max-body-bytes); larger
	// bodies get 413. Default 1 MiB.
	MaxBodyBytes int64
	// RequireBearer makes every /mcp POST carry "Authorization: Bearer
	// <token>" and enables the protected-resource metadata routes.
	RequireBearer bool
	// AuthorizationServers are the issuer URLs published in the protected
	// resource metadata (flag --authorization-servers). When empty,
	// AuthorizationServersFunc is asked instead.
	AuthorizationServers []string
	// AuthorizationServersFunc supplies the issuer URLs lazily, e.g. from
	// the provider's own metadata (see ProviderAuthorizationServers).
	AuthorizationServersFunc func(ctx context.Context) ([]string, error)
	// ExtraRoutes are more routes of the hosted mux (ServeMux patterns, not
	// the transport's own), served behind the Host check and the
	// observation, never capped and without a bearer (e.g. an OAuth
	// authorization facade); PublicBaseURL gives each this server's base.
	ExtraRoutes map[string]http.Handler
	// Authenticate, when set, decides the bearer of every /mcp POST after
	// RequireBearer's syntax check and before any JSON-RPC message (or batch
	// item) is dispatched; see AuthVerdict for the answers it leads to.
	Authenticate func(ctx context.Context, token string) AuthVerdict
	// Verified, when set beside Authenticate, reports without an upstream
	// call whether a bearer has a good verdict cached, and names its tenant
	// (a grant id; "": a hash of the token). Others wait for their check.
	Verified func(token string) (tenant string, ok bool)
	// MaxUnverifiedRequests caps the checks of bearers without a good
	// verdict yet that run at once (flag --max-unverified-requests, default
	// MaxConcurrentRequests/16, at least 4: 16, the RS connections the PDPP
	// server's checks read through). Checks wait in a fair line apart from
	// the request slots (see checkLine); a request is refused (503) only
	// when its own network's queue is full or its check had no turn in 20 s.
	MaxUnverifiedRequests int
	// MaxConnsPerNetwork caps the open connections of one network (IPv4
	// /24, IPv6 /64) that is not a trusted proxy (flag
	// --max-conns-per-network), MaxConnsPerAddress those of one client
	// address (flag --max-conns-per-address) and MaxConns those in all
	// (flag --max-conns); see connlimit.go. Negative is a configuration
	// error.
	MaxConnsPerNetwork int
	MaxConnsPerAddress int
	MaxConns           int
	// TrustedProxies lists the networks (CIDRs; a bare address is its own
	// /32 or /128) of the proxies in front of this server (flag
	// --trusted-proxies); a request from one of them has its client address
	// read from ForwardedHeader (see clientaddr.go). Empty: behind a proxy
	// every client shares the proxy's per-address bounds.
	TrustedProxies []string
	// ForwardedHeader is the header the trusted proxies write (flag
	// --forwarded-header): X-Forwarded-For (default) or Forwarded (RFC
	// 7239, its for= parameter). Only one is read: a client may send the
	// other one itself, and a proxy passes it on untouched.
	ForwardedHeader string
	// AllowedHosts lists the Host header values served on /mcp and the
	// metadata routes (flag --allowed-hosts, comma separated): "host" (any
	// port) or "host:port"; "*" serves any Host. Others get 421. Default:
	// localhost, 127.0.0.1, ::1 and the listen host when it names one. The
	// PublicBaseURL host is always served. /healthz and /readyz are not
	// checked.
	AllowedHosts []string
	// ReadyCheck backs /readyz; nil means always ready. It is called with a
	// DefaultReadyTimeout deadline.
	ReadyCheck func(ctx context.Context) error
	// ProtocolVersions are the MCP revisions accepted in the
	// MCP-Protocol-Version header and negotiated in initialize (no flag).
	// Default DefaultProtocolVersions().
	ProtocolVersions []string
	// Logger receives access logs and diagnostics; it must write to stderr
	// (or elsewhere), never stdout. Default slog.Default().
	Logger *slog.Logger

	// Server timeouts (flags --write-timeout and --shutdown-timeout; the
	// others keep their defaults). WriteTimeout defaults to RequestTimeout
	// plus 10s and ShutdownTimeout to WriteTimeout plus 5s (see
	// requestSlack); ServeHTTP warns when explicit values break that order.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	ShutdownTimeout   time.Duration

	// Bounds of the work one /mcp request may cause. MaxBatchItems caps
	// the messages of a JSON-RPC batch (flag
	// --max-batch-items, default 16): a longer batch is refused as a whole
	// with a JSON-RPC error and none of its items runs.
	MaxBatchItems int
	// MaxReplyBytes caps the body of one reply, batch or not (flag
	// --max-reply-bytes, default 16 MiB); see serveBatch for a batch.
	MaxReplyBytes int64
	// MaxConcurrentRequests caps the /mcp requests served at once (flag
	// --max-concurrent-requests, default 256; see admitMiddleware); one more
	// is answered 503 server_busy at once. Probes and metadata are never capped.
	MaxConcurrentRequests int
	// MaxConcurrentPerTenant caps the /mcp requests of one verified token
	// served at once while another tenant is served (see slotGate.take)
	// (flag --max-concurrent-per-token; default one per CPU, at least 2;
	// negative: no such cap); one more gets 503 (reason tenant_share_busy).
	// A call's CPU time is shared with every call running beside it: one
	// token looping detail "full" calls on 24 connections moved another
	// token's 10 ms search to a p95 of 1.9 s with four calls per CPU
	// allowed, 0.24 s with one (TestOneTokenLoopingFullCallsLeavesOthersFast,
	// on a loaded 2-core machine).
	MaxConcurrentPerTenant int
	// BodyReadTimeout bounds the time a request body may take to arrive,
	// counted from when its reading starts (flag --body-read-timeout,
	// default 10s); a slower body gets 408.
	BodyReadTimeout time.Duration
	// MaxBodyReaders caps the /mcp requests reading their bodies at once
	// (flag --max-body-readers, default 128), and MaxBodyReadersPerClient
	// those from one client address, an IPv4 address or an IPv6 /64 (flag
	// --max-body-readers-per-client, default 16; at most MaxBodyReaders);
	// see bodyread.go. Behind a proxy set TrustedProxies, or every request
	// comes from the proxy's address.
	MaxBodyReaders          int
	MaxBodyReadersPerClient int
	// MaxBodyReadersPerPrefix caps those of an IPv4 /24 or an IPv6 /64
	// (flag --max-body-readers-per-prefix, default 32).
	MaxBodyReadersPerPrefix int
	// MinBodyRate is the slowest average rate, in bytes per second, at
	// which a request body may arrive once its first second has passed
	// (flag --min-body-rate, default 1024; negative: no minimum); a slower
	// body is answered 408 (reason body_too_slow).
	MinBodyRate int64
	// RequestTimeout is the deadline of one whole /mcp request (flag
	// --request-timeout; see the package doc). Default CallTimeout plus
	// 5s, or 60s when CallTimeout is not set.
	RequestTimeout time.Duration
	// DrainDelay is how long ServeHTTP keeps serving after ctx ends, with
	// /readyz answering 503, before it closes the listener and drains (flag
	// --drain-delay, default 0): time for a load balancer to see the probe
	// fail and stop routing here.
	DrainDelay time.Duration
	// CallTimeout is the budget of one tool call or resource read, applied
	// by the MCP server's own handler middleware (for the PDPP server,
	// --rs-timeout). The transport only derives its deadlines from it.
	CallTimeout time.Duration

	// Metrics, when set, receives the counts of HTTP requests, tool calls,
	// batches and authentication refusals (see Observe).
	Metrics *metrics.Metrics
	// AdminListener, when set, is bound by the caller (flag --admin-listen)
	// and served by ServeHTTP with /healthz, /readyz and /metrics, outside
	// the connection bounds of Listen (see serve.go); ServeHTTP closes it.
	AdminListener net.Listener
	// OnListen, when set, is called by ServeHTTP with the bound address
	// before serving starts (useful with Listen ":0").
	OnListen func(addr net.Addr)
}

// settings is an HTTPConfig after defaults and validation, parsed.
type settings struct {
	HTTPConfig
	origins    map[string]bool // canonical scheme://host:port
	publicBase *url.URL        // nil: derive from the request
	hosts      hostSet         // Host values served (see AllowedHosts)
	proxies    proxySet        // TrustedProxies, parsed
	versions   []string
	logger     *slog.Logger
	allow      string // the Allow value for /mcp
}

// Effective returns c with every default applied and every derived timeout
// filled in (request deadline, write timeout, shutdown grace), as the
// server will use it, or the first configuration error.
func (c HTTPConfig) Effective() (HTTPConfig, error) {
	st, err := c.settle()
	if err != nil {
		return HTTPConfig{}, err
	}
	return st.HTTPConfig, nil
}

func (c HTTPConfig) settle() (*settings, error) {
	st := &settings{HTTPConfig: c}
	st.Listen = cmp.Or(st.Listen, DefaultListen)
	if _, _, err := net.SplitHostPort(st.Listen); err != nil {
		return nil, fmt.Errorf("listen address %q: %w", st.Listen, err)
	}
	st.MaxBodyBytes = cmp.Or(st.MaxBodyBytes, DefaultMaxBodyBytes)
	if st.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("max body bytes must be positive, got %d", st.MaxBodyBytes)
	}
	st.ReadHeaderTimeout = cmp.Or(max(st.ReadHeaderTimeout, 0), DefaultReadHeaderTimeout)
	st.ReadTimeout = cmp.Or(max(st.ReadTimeout, 0), DefaultReadTimeout)
	st.IdleTimeout = cmp.Or(max(st.IdleTimeout, 0), DefaultIdleTimeout)
	if err := st.settleBounds(); err != nil {
		return nil, err
	}

	st.logger = cmp.Or(c.Logger, slog.Default())

	st.origins = make(map[string]bool, len(c.AllowedOrigins))
	for _, o := range c.AllowedOrigins {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		canon, err := canonicalOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("allowed origin %q: %w", o, err)
		}
		st.origins[canon] = true
	}
	if c.CORS && len(st.origins) == 0 {
		return nil, errors.New("CORS needs at least one allowed origin")
	}
	st.allow = "POST"
	if c.CORS {
		st.allow = "POST, OPTIONS"
	}

	if c.PublicBaseURL != "" {
		u, err := parsePublicBase(c.PublicBaseURL)
		if err != nil {
			return nil, fmt.Errorf("public base URL %q: %w", c.PublicBaseURL, err)
		}
		st.publicBase = u
	}

	var err error
	if st.hosts, err = c.hostSet(st.publicBase); err != nil {
		return nil, err
	}
	if st.proxies, err = parseProxies(c.TrustedProxies, c.ForwardedHeader); err != nil {
		return nil, err
	}

	st.versions = slices.Clone(c.ProtocolVersions)
	if len(st.versions) == 0 {
		st.versions = DefaultProtocolVersions()
	}
	for _, v := range st.versions {
		if !mcp.IsValidProtocolVersion(v) || v < firstStreamableVersion {
			return nil, fmt.Errorf("protocol version %q is not served over Streamable HTTP by this transport", v)
		}
	}
	// Newest first, so negotiation picks the highest shared revision.
	slices.SortFunc(st.versions, func(a, b string) int { return strings.Compare(b, a) })
	st.versions = slices.Compact(st.versions)

	for _, as := range c.AuthorizationServers {
		if err := checkAbsoluteHTTPURL(as); err != nil {
			return nil, fmt.Errorf("authorization server %q: %w", as, err)
		}
	}
	for pattern, h := range c.ExtraRoutes {
		if h == nil || slices.Contains(ownRoutes, pattern) {
			return nil, fmt.Errorf("extra route %q: nil, or a route the transport serves itself", pattern)
		}
	}
	return st, nil
}

// settleBounds applies the defaults of the bounds and derives the request
// deadline, write timeout and shutdown grace from the call budget.
func (st *settings) settleBounds() error {
	st.MaxBatchItems = cmp.Or(st.MaxBatchItems, DefaultMaxBatchItems)
	if st.MaxBatchItems < 0 {
		return fmt.Errorf("max batch items must be positive, got %d", st.MaxBatchItems)
	}
	st.MaxConcurrentRequests = cmp.Or(st.MaxConcurrentRequests, DefaultMaxConcurrentRequests)
	if st.MaxConcurrentRequests < 0 {
		return fmt.Errorf("max concurrent requests must be positive, got %d", st.MaxConcurrentRequests)
	}
	st.MaxBodyReaders = cmp.Or(st.MaxBodyReaders, DefaultMaxBodyReaders)
	st.MaxBodyReadersPerClient = cmp.Or(st.MaxBodyReadersPerClient, min(DefaultMaxBodyReadersPerClient, st.MaxBodyReaders))
	if st.MaxBodyReaders < 0 || st.MaxBodyReadersPerClient < 0 {
		return fmt.Errorf("max body readers must be positive, got %d and %d per client", st.MaxBodyReaders, st.MaxBodyReadersPerClient)
	}
	// One client can never hold more than every place.
	st.MaxBodyReadersPerClient = min(st.MaxBodyReadersPerClient, st.MaxBodyReaders)
	switch {
	case st.MaxConcurrentPerTenant == 0:
		st.MaxConcurrentPerTenant = max(2, runtime.GOMAXPROCS(0))
	case st.MaxConcurrentPerTenant < 0:
		st.MaxConcurrentPerTenant = st.MaxConcurrentRequests
	}
	st.MaxUnverifiedRequests = cmp.Or(st.MaxUnverifiedRequests, max(4, st.MaxConcurrentRequests/16))
	if st.MaxUnverifiedRequests < 0 {
		return fmt.Errorf("max unverified requests must be positive, got %d", st.MaxUnverifiedRequests)
	}
	st.MaxConnsPerNetwork = cmp.Or(st.MaxConnsPerNetwork, DefaultMaxConnsPerNetwork)
	st.MaxConnsPerAddress = cmp.Or(st.MaxConnsPerAddress, DefaultMaxConnsPerAddress)
	st.MaxConns = cmp.Or(st.MaxConns, DefaultMaxConns)
	if st.MaxConnsPerNetwork < 0 || st.MaxConnsPerAddress < 0 || st.MaxConns < 0 {
		return fmt.Errorf("max connections must be positive, got %d per address, %d per network and %d in all", st.MaxConnsPerAddress, st.MaxConnsPerNetwork, st.MaxConns)
	}
	st.MaxBodyReadersPerPrefix = cmp.Or(st.MaxBodyReadersPerPrefix, DefaultMaxBodyReadersPerPrefix)
	if st.MaxBodyReadersPerPrefix < 0 {
		return fmt.Errorf("max body readers per prefix must be positive, got %d", st.MaxBodyReadersPerPrefix)
	}
	st.MaxBodyReadersPerPrefix = min(max(st.MaxBodyReadersPerPrefix, st.MaxBodyReadersPerClient), st.MaxBodyReaders)
	st.MinBodyRate = cmp.Or(st.MinBodyRate, DefaultMinBodyRate)
	if st.BodyReadTimeout < 0 {
		return errors.New("timeouts must not be negative")
	}
	st.MaxReplyBytes = cmp.Or(st.MaxReplyBytes, DefaultMaxReplyBytes)
	if st.MaxReplyBytes < 1024 {
		return fmt.Errorf("max reply bytes must be at least 1024, got %d", st.MaxReplyBytes)
	}
	if st.CallTimeout < 0 || st.RequestTimeout < 0 || st.WriteTimeout < 0 || st.ShutdownTimeout < 0 || st.DrainDelay < 0 {
		return errors.New("timeouts must not be negative")
	}
	st.BodyReadTimeout = cmp.Or(st.BodyReadTimeout, DefaultBodyReadTimeout)
	if st.RequestTimeout == 0 {
		st.RequestTimeout = DefaultRequestTimeout
		if st.CallTimeout > 0 {
			st.RequestTimeout = st.CallTimeout + requestSlack
		}
	}
	if st.CallTimeout > 0 && st.RequestTimeout <= st.CallTimeout {
		return fmt.Errorf("request timeout %v must be longer than the call budget %v, or a slow call is cut before it can report rs_timeout", st.RequestTimeout, st.CallTimeout)
	}
	st.WriteTimeout = cmp.Or(st.WriteTimeout, st.RequestTimeout+writeSlack)
	st.ShutdownTimeout = cmp.Or(st.ShutdownTimeout, st.WriteTimeout+shutdownSlack)
	return nil
}

// warnBounds logs explicit timeouts that break the order call budget <
// request deadline < write timeout < shutdown grace.
func (st *settings) warnBounds() {
	if st.WriteTimeout <= st.RequestTimeout {
		st.logger.Warn(fmt.Sprintf("write timeout %v is not longer than the request timeout %v: a slow request may lose its reply", st.WriteTimeout, st.RequestTimeout))
	}
	if st.ShutdownTimeout <= st.WriteTimeout {
		st.logger.Warn(fmt.Sprintf("shutdown timeout %v is not longer than the write timeout %v: a shutdown may cut calls still in flight", st.ShutdownTimeout, st.WriteTimeout))
	}
}

// supports reports whether v is one of the configured protocol versions.
func (st *settings) supports(v string) bool { return slices.Contains(st.versions, v) }

// newestLegacy is the highest configured revision that still uses the
// initialize handshake, or "" if none is configured.
func (st *settings) newestLegacy() string {
	for _, v := range st.versions {
		if !mcp.IsModernProtocol(v) {
			return v
		}
	}
	return ""
}

// canonicalOrigin turns an origin into scheme://host:port with a lower-case
// scheme and host and an explicit port, so that https://a.example and
// https://a.example:443 compare equal and nothing else does.
func canonicalOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", errors.New("scheme must be http or https")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") || u.Opaque != "" {
		return "", errors.New("an origin is scheme://host[:port] only")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("missing host")
	}
	port := cmp.Or(u.Port(), "80")
	if scheme == "https" && u.Port() == "" {
		port = "443"
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}

func parsePublicBase(s string) (*url.URL, error) {
	if err := checkAbsoluteHTTPURL(s); err != nil {
		return nil, err
	}
	u, _ := url.Parse(s)
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, errors.New("must not carry user info, query or fragment")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

func checkAbsoluteHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http(s) URL")
	}
	return nil
}

// isLoopbackListen reports whether a listen address only accepts loopback
// connections. An empty host or an unspecified address binds every interface.
func isLoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && (strings.EqualFold(host, "localhost") || net.ParseIP(host).IsLoopback())
}

package cmdkit

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"syscall"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
)

// HTTPFlags are the hosted-transport flags every server shares; each program
// names their environment variables with its own prefix. Most flags set a
// member of the embedded transport configuration; the comma-separated lists
// are kept as given and split by Config.
type HTTPFlags struct {
	transport.HTTPConfig
	Origins, Hosts, TrustedProxies string

	// AdminListen is the address of the admin listener serving /healthz,
	// /readyz and /metrics apart from /mcp (flag --admin-listen, default
	// DefaultAdminListen); empty turns it and metrics off. MetricsListen
	// is its older name (flag --metrics-listen): when set, it is the
	// admin listener's address.
	AdminListen   string
	MetricsListen string
	metrics       *metrics.Metrics

	// RequestTimeoutDefault says in --help what --request-timeout 0 means,
	// since each server derives its own default (e.g. "--rs-timeout + 5s").
	// Set it before Register.
	RequestTimeoutDefault string
}

// DefaultAdminListen is the admin listener's address by default: loopback,
// so probes and metrics are there on the host but reach no one beyond it.
// The port is the one usual for a Prometheus exporter.
const DefaultAdminListen = "127.0.0.1:9464"

// Register defines the flags of HTTPFlags (--listen, --allowed-origins and
// the rest, as listed below), read from <envPrefix>LISTEN and so on.
func (h *HTTPFlags) Register(f *FlagSet, envPrefix, defListen string) error {
	f.Str(&h.Listen, "listen", envPrefix+"LISTEN", defListen, "address to listen on (loopback by default)")
	f.Str(&h.Origins, "allowed-origins", envPrefix+"ALLOWED_ORIGINS", "", "comma-separated browser origins allowed to call /mcp (scheme://host:port); requests without Origin are always allowed")
	f.Str(&h.PublicBaseURL, "public-base-url", envPrefix+"PUBLIC_BASE_URL", "", "external base URL when behind a proxy, e.g. https://mcp.example.com")
	f.Str(&h.Hosts, "allowed-hosts", envPrefix+"ALLOWED_HOSTS", "", "comma-separated Host values served (host or host:port; * for any); default: localhost, 127.0.0.1, ::1 and the listen host; the --public-base-url host is always served")
	f.Str(&h.AdminListen, "admin-listen", envPrefix+"ADMIN_LISTEN", DefaultAdminListen, "address of the admin listener serving /healthz, /readyz and /metrics apart from /mcp and its connection bounds; point probes and scraping here (empty: off, and no metrics)")
	f.Str(&h.MetricsListen, "metrics-listen", envPrefix+"METRICS_LISTEN", "", "older name of --admin-listen: when set, the admin listener's address")
	f.Str(&h.TrustedProxies, "trusted-proxies", envPrefix+"TRUSTED_PROXIES", "", "comma-separated CIDRs of the proxies in front of this server: from a peer in one of them the client address is the right-most untrusted one of --forwarded-header, for every per-address bound and the access log; empty: the peer's address (everyone behind a proxy then shares its per-address bounds)")
	f.Str(&h.ForwardedHeader, "forwarded-header", envPrefix+"FORWARDED_HEADER", transport.HeaderXForwardedFor, "the header the trusted proxies write the client address in: X-Forwarded-For or Forwarded (only that one is read)")
	def := cmp.Or(h.RequestTimeoutDefault, "the server's default")
	return cmp.Or(
		f.Bool(&h.CORS, "cors", envPrefix+"CORS", false, "answer CORS preflight for the allowed origins"),
		f.Int64(&h.MaxBodyBytes, "max-body-bytes", envPrefix+"MAX_BODY_BYTES", transport.DefaultMaxBodyBytes, "largest accepted request body"),
		f.Int(&h.MaxBatchItems, "max-batch-items", envPrefix+"MAX_BATCH_ITEMS", transport.DefaultMaxBatchItems, "most messages in one JSON-RPC batch; a longer batch is refused whole"),
		f.Int64(&h.MaxReplyBytes, "max-reply-bytes", envPrefix+"MAX_REPLY_BYTES", transport.DefaultMaxReplyBytes, "largest reply body; a larger reply becomes a JSON-RPC error"),
		f.Int(&h.MaxConcurrentRequests, "max-concurrent-requests", envPrefix+"MAX_CONCURRENT_REQUESTS", transport.DefaultMaxConcurrentRequests, "most /mcp requests served at once; one more is answered 503 with Retry-After at once"),
		f.Int(&h.MaxConcurrentPerTenant, "max-concurrent-per-token", envPrefix+"MAX_CONCURRENT_PER_TOKEN", 0, "most /mcp requests of one bearer token served at once while others are served; one more is answered 503 at once (0: one per CPU, at least 2; negative: no such cap)"),
		f.Dur(&h.BodyReadTimeout, "body-read-timeout", envPrefix+"BODY_READ_TIMEOUT", transport.DefaultBodyReadTimeout, "longest time a request body may take to arrive once its reading starts; a slower one is answered 408 without holding a request slot"),
		f.Int(&h.MaxBodyReaders, "max-body-readers", envPrefix+"MAX_BODY_READERS", transport.DefaultMaxBodyReaders, "most requests whose bodies are still arriving (beyond a prompt 64 KiB) read at once; one more is answered 503 at once"),
		f.Int(&h.MaxBodyReadersPerClient, "max-body-readers-per-client", envPrefix+"MAX_BODY_READERS_PER_CLIENT", transport.DefaultMaxBodyReadersPerClient, "most of those from one client address (IPv4 address or IPv6 /64); behind a proxy that does not buffer request bodies, raise it to --max-body-readers"),
		f.Int(&h.MaxBodyReadersPerPrefix, "max-body-readers-per-prefix", envPrefix+"MAX_BODY_READERS_PER_PREFIX", transport.DefaultMaxBodyReadersPerPrefix, "most of those from one network (IPv4 /24 or IPv6 /64); while several networks compete each also keeps within a share that leaves a place for one more"),
		f.Int64(&h.MinBodyRate, "min-body-rate", envPrefix+"MIN_BODY_RATE", transport.DefaultMinBodyRate, "slowest average rate, in bytes a second, at which a request body may arrive after its first second; a slower one is answered 408 and its connection closed (negative: no minimum)"),
		f.Int(&h.MaxUnverifiedRequests, "max-unverified-requests", envPrefix+"MAX_UNVERIFIED_REQUESTS", 0, "most checks of bearers with no good verdict yet run at once, apart from the request slots; the others wait their turn in a fair line between networks (IPv4 /24, IPv6 /48), a quarter kept for addresses that showed a good token within a day; a request is refused 503 only when its own network's queue is full (0: --max-concurrent-requests/16, at least 4)"),
		f.Int(&h.MaxConnsPerNetwork, "max-conns-per-network", envPrefix+"MAX_CONNS_PER_NETWORK", transport.DefaultMaxConnsPerNetwork, "most open connections from one network (IPv4 /24 or IPv6 /64) that is not a trusted proxy; while several networks hold connections each also keeps within a share that leaves a place for one more; one more is answered 503 and closed at once"),
		f.Int(&h.MaxConnsPerAddress, "max-conns-per-address", envPrefix+"MAX_CONNS_PER_ADDRESS", transport.DefaultMaxConnsPerAddress, "most open connections from one client address (an IPv6 address counts as its /64) that is not a trusted proxy"),
		f.Int(&h.MaxConns, "max-conns", envPrefix+"MAX_CONNS", transport.DefaultMaxConns, "most open connections in all, each up to 24 KiB (count them in the memory limit); at it, an idle connection of the network holding the most is closed for a newcomer; keep it under the process's file-descriptor limit"),
		f.Dur(&h.RequestTimeout, "request-timeout", envPrefix+"REQUEST_TIMEOUT", 0, "deadline of one whole /mcp request, batch included (0: "+def+")"),
		f.Dur(&h.WriteTimeout, "write-timeout", envPrefix+"WRITE_TIMEOUT", 0, "longest time to answer one request; keep it above --request-timeout (0: request timeout + 10s)"),
		f.Dur(&h.DrainDelay, "drain-delay", envPrefix+"DRAIN_DELAY", 0, "on SIGTERM, keep serving this long with /readyz answering 503 before closing the listener"),
		f.Dur(&h.ShutdownTimeout, "shutdown-timeout", envPrefix+"SHUTDOWN_TIMEOUT", 0, "longest wait for in-flight requests on SIGTERM; keep it above --write-timeout (0: write timeout + 5s)"),
	)
}

// Config is the transport configuration these flags describe.
func (h *HTTPFlags) Config(log *slog.Logger) transport.HTTPConfig {
	cfg := h.HTTPConfig
	cfg.AllowedOrigins, cfg.AllowedHosts, cfg.TrustedProxies = SplitList(h.Origins), SplitList(h.Hosts), SplitList(h.TrustedProxies)
	cfg.Logger, cfg.Metrics = log, h.Metrics()
	return cfg
}

// adminAddr is the admin listener's address: --metrics-listen when set,
// else --admin-listen.
func (h *HTTPFlags) adminAddr() string { return cmp.Or(h.MetricsListen, h.AdminListen) }

// Metrics returns this server's instruments (one private registry per
// HTTPFlags), or nil when the admin listener is off.
func (h *HTTPFlags) Metrics() *metrics.Metrics {
	if h.adminAddr() == "" {
		return nil
	}
	if h.metrics == nil {
		h.metrics = metrics.New()
	}
	return h.metrics
}

// ServeWithMetrics binds the admin listener (when it is on), then serves
// handler with cfg until ctx ends (see Serve), and its probes and metrics
// on the admin listener. onMetrics receives the admin address only once
// the MCP listener is bound (before cfg.OnListen is called): an MCP
// address in use fails before anything says it is serving. The admin
// listener stops with the server. An address in use fails, except the
// default one: then the server logs a warning and serves without it (two
// servers on one host, or tests side by side). Every hosted command ends
// here.
func (h *HTTPFlags) ServeWithMetrics(ctx context.Context, log *slog.Logger, handler http.Handler, cfg transport.HTTPConfig, onMetrics func(net.Addr)) error {
	addr := h.adminAddr()
	if addr == "" {
		return Serve(ctx, handler, cfg)
	}
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE) && addr == DefaultAdminListen:
		log.Warn("admin listener: the default address is in use; serving without probes and metrics apart from /mcp (set --admin-listen)", "addr", addr, "err", err)
		return Serve(ctx, handler, cfg)
	case errors.Is(err, syscall.EADDRINUSE):
		return Fail(ExitUnavailable, "admin listener: %v (pick another address with --admin-listen, e.g. 127.0.0.1:0)", err)
	case err != nil:
		return Fail(ExitUsage, "admin listener: %v", err)
	}
	cfg.AdminListener = ln
	onListen := cfg.OnListen
	cfg.OnListen = func(a net.Addr) {
		if onMetrics != nil {
			onMetrics(ln.Addr())
		}
		if onListen != nil {
			onListen(a)
		}
	}
	return Serve(ctx, handler, cfg)
}

// Serve runs handler with cfg until ctx ends; an address already in use is an
// "unavailable" exit with the fix named.
func Serve(ctx context.Context, handler http.Handler, cfg transport.HTTPConfig) error {
	err := transport.ServeHTTP(ctx, handler, cfg)
	if errors.Is(err, syscall.EADDRINUSE) {
		return Fail(ExitUnavailable, "%v (pick another address with --listen, e.g. 127.0.0.1:0)", err)
	}
	return err
}

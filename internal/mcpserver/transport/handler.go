package transport

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sync/singleflight"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/docache"
)

// NewHTTPHandler builds the hosted mux around s, with the stages of the
// package doc:
//
//	/mcp                                       JSON-RPC over POST (the middleware chain)
//	/healthz                                   liveness, no upstream call
//	/readyz                                    HTTPConfig.ReadyCheck
//	/.well-known/oauth-protected-resource[/mcp] RFC 9728 metadata (RequireBearer only)
//	HTTPConfig.ExtraRoutes                     as configured
//
// s gets a tool middleware (toolObserver), so build one handler per
// server. s must pass VerifyCapabilities.
func NewHTTPHandler(s *server.MCPServer, cfg HTTPConfig) (http.Handler, error) {
	if s == nil {
		return nil, errors.New("transport: nil MCP server")
	}
	st, err := cfg.settle()
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	if err := VerifyCapabilities(s); err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}

	s.Use(toolObserver(st.Metrics)) // metrics and request ids of tool calls (toolObserver)
	slots := newSlotGate(st.MaxConcurrentRequests, st.MaxConcurrentPerTenant)
	checks := newTokenChecks(st)
	st.Metrics.WatchUnverified(func() int { return int(checks.waiting.Load()) })
	st.Metrics.WatchTokenChecks(checks.line.depth)
	var mcpHandler http.Handler = &dispatcher{st: st, core: server.NewStreamableHTTPServer(s,
		server.WithStateLess(true),
		server.WithDisableStreaming(true),
		server.WithStreamableHTTPLogger(st.logger),
		server.WithStreamableHTTPProtocolVersions(st.versions...),
	)}
	mcpHandler = st.admitMiddleware(slots, checks, mcpHandler)
	mcpHandler = st.protocolVersionMiddleware(mcpHandler)
	places := newReaderPlaces(st.MaxBodyReaders, st.MaxBodyReadersPerClient, st.MaxBodyReadersPerPrefix)
	verifiedPlaces := newTenantPlaces(st.MaxBodyReaders, st.MaxBodyReadersPerClient)
	st.Metrics.WatchBodyReaders(func() int { return places.held() + verifiedPlaces.held() })
	mcpHandler = st.bodyReadMiddleware(places, verifiedPlaces, mcpHandler)
	mcpHandler = st.originMiddleware(mcpHandler)
	mcpHandler = st.methodMiddleware(mcpHandler)

	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { st.readyz(w, r, slots) })
	if st.RequireBearer {
		prm := st.withBase(st.metadataHandler())
		mux.Handle(wellKnownPRM, prm)
		mux.Handle(wellKnownPRM+"/mcp", prm)
	}
	for pattern, h := range st.ExtraRoutes {
		mux.Handle(pattern, st.withBase(h))
	}
	st.warnHosts()
	return observe(st.Metrics, st.logger, st.proxies, st.hostMiddleware(mux)), nil
}

func probeMethodOK(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeJSON(w, http.StatusMethodNotAllowed, []byte(`{"status":"method_not_allowed"}`))
	return false
}

// healthz reports that the process serves HTTP; it calls nothing upstream.
func healthz(w http.ResponseWriter, r *http.Request) {
	if probeMethodOK(w, r) {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	}
}

// readyz tells a load balancer whether this replica can serve verified
// work: 503 ("busy") while every request slot has been taken for longer
// than busyNotReadyAfter by verified work (only with Authenticate: without
// it anyone could fill them), else ReadyCheck's verdict (200 or 503), and
// 503 "draining" once shutdown began (drainGate). Nothing an
// unauthenticated sender can cause on every replica at once (reading
// places, the line of token checks) turns it 503. The cause of a 503 (which
// may name the provider URL or a dial error) goes to the log, not the body.
func (st *settings) readyz(w http.ResponseWriter, r *http.Request, slots *slotGate) {
	if !probeMethodOK(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if since, full := slots.full(); st.Authenticate != nil && full && time.Since(since) > busyNotReadyAfter {
		st.logger.Warn("not ready: every request slot has been taken by verified work", "for", time.Since(since).Round(time.Millisecond).String(),
			"max_concurrent_requests", st.MaxConcurrentRequests)
		writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"busy"}`))
		return
	}
	if st.ReadyCheck != nil {
		ctx, cancel := context.WithTimeout(r.Context(), DefaultReadyTimeout)
		err := st.ReadyCheck(ctx)
		cancel()
		if err != nil {
			st.logger.Warn("not ready", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"unavailable"}`))
			return
		}
	}
	writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`))
}

// HTTPReadyCheck returns a ReadyCheck that passes when target answers an
// unauthenticated GET with any status below 500 (for the PDPP adapter: the
// RS root), its body drained up to a small bound. /readyz is never gated,
// so concurrent probes share one upstream request, detached from any one
// probe under DefaultReadyTimeout, and its outcome answers for readyReuse:
// a probe flood makes at most one upstream request per readyReuse.
func HTTPReadyCheck(client *http.Client, target string) func(context.Context) error {
	if client == nil {
		client = http.DefaultClient
	}
	var (
		flight singleflight.Group // at most one request at a time
		mu     sync.Mutex
		at     time.Time // when the last request ended; zero before the first
		last   error     // its outcome
	)
	check := func() (any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultReadyTimeout)
		defer cancel()
		err := getReady(ctx, client, target)
		mu.Lock()
		at, last = time.Now(), err
		mu.Unlock()
		return nil, err
	}
	return func(ctx context.Context) error {
		mu.Lock()
		if !at.IsZero() && time.Since(at) < readyReuse {
			defer mu.Unlock()
			return last
		}
		// Joined under mu: a request that ended since was seen above, so
		// none starts within readyReuse of another.
		done := flight.DoChan("", check)
		mu.Unlock()
		select {
		case res := <-done:
			return res.Err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readyReuse is how long one upstream readiness outcome answers /readyz.
const readyReuse = time.Second

func getReady(ctx context.Context, client *http.Client, target string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("upstream unreachable: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("upstream answered %d", resp.StatusCode)
	}
	return nil
}

// The only server capabilities the hosted endpoint may advertise, and the
// only extension: MCP Apps (views the host renders and that call tools
// through the host, each call an ordinary stateless request).
var (
	allowedCapabilities = []string{"tools", "resources", "extensions"}
	allowedExtensions   = []string{"io.modelcontextprotocol/ui"}
)

// VerifyCapabilities runs an in-process initialize against s and checks that
// it advertises tools (and optionally resources and the MCP Apps extension)
// and nothing else, that neither asks for listChanged or subscribe (nothing
// can be pushed on a stateless JSON-only endpoint), and that instructions
// are present: build it with server.WithToolCapabilities(false),
// server.WithResourceCapabilities(false, false) and WithInstructions.
func VerifyCapabilities(s *server.MCPServer) error {
	const probe = `{"jsonrpc":"2.0","id":"capability-check","method":"initialize","params":{` +
		`"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"capability-check","version":"0"}}}`
	raw, err := json.Marshal(s.HandleMessage(context.Background(), json.RawMessage(probe)))
	if err != nil {
		return fmt.Errorf("capability check: %w", err)
	}
	var resp struct {
		Result *struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
			Instructions string                     `json:"instructions"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil || resp.Result == nil {
		return fmt.Errorf("capability check: initialize failed: %s", raw)
	}
	caps := resp.Result.Capabilities
	if _, ok := caps["tools"]; !ok {
		return errors.New("capability check: the server advertises no tools")
	}
	for name, body := range caps {
		if !slices.Contains(allowedCapabilities, name) {
			return fmt.Errorf("capability check: %q must not be advertised (only tools, resources and extensions)", name)
		}
		if name == "extensions" {
			var ext map[string]json.RawMessage
			_ = json.Unmarshal(body, &ext)
			for id := range ext {
				if !slices.Contains(allowedExtensions, id) {
					return fmt.Errorf("capability check: extension %q must not be advertised (only %s)", id, strings.Join(allowedExtensions, ", "))
				}
			}
			continue
		}
		var flags struct {
			ListChanged bool `json:"listChanged"`
			Subscribe   bool `json:"subscribe"`
		}
		_ = json.Unmarshal(body, &flags)
		if flags.ListChanged || flags.Subscribe {
			return fmt.Errorf("capability check: %s advertises listChanged/subscribe, which a stateless endpoint cannot deliver", name)
		}
	}
	if resp.Result.Instructions == "" {
		return errors.New("capability check: the server has no instructions")
	}
	return nil
}

const wellKnownPRM = server.WellKnownProtectedResourcePath // RFC 9728

// base is the public origin and path prefix for r: PublicBaseURL, else the
// scheme and Host of the request.
func (st *settings) base(r *http.Request) (origin, path string) {
	if b := st.publicBase; b != nil {
		return b.Scheme + "://" + b.Host, b.Path
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + cmp.Or(r.Host, "localhost"), ""
}

// ownRoutes are the mux patterns the transport serves itself.
var ownRoutes = []string{"/mcp", "/healthz", "/readyz", wellKnownPRM, wellKnownPRM + "/mcp"}

type baseKey struct{}

// withBase puts the public base for r into its context (PublicBaseURL).
func (st *settings) withBase(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin, path := st.base(r)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), baseKey{}, origin+path)))
	})
}

// PublicBaseURL returns the public origin (and path prefix) of this server,
// without a trailing slash, for a request served by an HTTPConfig.ExtraRoutes
// handler or by the protected-resource metadata (so also inside
// AuthorizationServersFunc): HTTPConfig.PublicBaseURL when set, otherwise
// derived from the request's Host, which the Host check has let through.
// Outside those it returns "".
func PublicBaseURL(ctx context.Context) string {
	b, _ := ctx.Value(baseKey{}).(string)
	return b
}

// resourceURL is the public URL of /mcp, the resource identifier.
func (st *settings) resourceURL(r *http.Request) string {
	origin, path := st.base(r)
	return origin + path + "/mcp"
}

// metadataURL is where /mcp's protected-resource metadata lives: the
// well-known segment between host and resource path (RFC 9728 section 3.1).
func (st *settings) metadataURL(r *http.Request) string {
	origin, path := st.base(r)
	return origin + wellKnownPRM + path + "/mcp"
}

// MetadataMethod answers what every public metadata document answers
// alike: any origin may read it (Access-Control-Allow-Origin: *), a CORS
// preflight gets 204, any method but GET, HEAD and OPTIONS 405. It reports
// whether the request is a GET or HEAD for the caller to serve.
func MetadataMethod(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	h.Set("Allow", "GET, HEAD, OPTIONS")
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
	} else {
		writeJSON(w, http.StatusMethodNotAllowed, []byte(`{"error":"method_not_allowed"}`))
	}
	return false
}

// metadataHandler serves the RFC 9728 document for /mcp, with issuers from
// AuthorizationServers or AuthorizationServersFunc; when that fails, 503,
// so clients retry rather than cache a document without issuers.
func (st *settings) metadataHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !MetadataMethod(w, r) {
			return
		}
		h := w.Header()
		issuers := slices.Clone(st.AuthorizationServers)
		if len(issuers) == 0 && st.AuthorizationServersFunc != nil {
			ctx, cancel := context.WithTimeout(r.Context(), DefaultReadyTimeout)
			list, err := st.AuthorizationServersFunc(ctx)
			cancel()
			if err != nil {
				if !errors.Is(err, docache.ErrFetchFailed) { // a failed fetch is logged once, by its cache
					st.logger.Warn("authorization servers unavailable", "err", err)
				}
				h.Set("Retry-After", "30")
				writeJSON(w, http.StatusServiceUnavailable, []byte(`{"error":"temporarily_unavailable","error_description":"the authorization server list could not be loaded; retry later"}`))
				return
			}
			issuers = list
		}
		body, _ := json.Marshal(struct {
			Resource               string   `json:"resource"`
			AuthorizationServers   []string `json:"authorization_servers,omitempty"`
			BearerMethodsSupported []string `json:"bearer_methods_supported"`
		}{st.resourceURL(r), issuers, []string{"header"}})
		h.Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, body)
	})
}

// maxMetadataBytes bounds the provider metadata document read.
const maxMetadataBytes = 256 << 10

// ProviderAuthorizationServers returns an AuthorizationServersFunc that reads
// authorization_servers from the provider's own protected-resource metadata
// (RFC 9728: the well-known path before the provider URL's path), sending
// no credentials, through a docache.Cache: one fetch at a time, a success
// kept for ttl (default 10 minutes), the previous answer served while a
// refresh fails, a failure remembered (and logged once, to log, default
// slog.Default()) for docache.DefaultFailMemo, so a failing provider costs
// one fetch per memo period, not one per request.
func ProviderAuthorizationServers(client *http.Client, providerURL string, ttl time.Duration, log *slog.Logger) (func(context.Context) ([]string, error), error) {
	u, err := url.Parse(providerURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("provider URL %q must be an absolute http(s) URL", providerURL)
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	target := u.Scheme + "://" + u.Host + wellKnownPRM + strings.TrimRight(u.Path, "/")
	cache := docache.New(docache.Config[[]string]{
		Fetch: func(ctx context.Context) ([]string, error) { return fetchIssuers(ctx, client, target) },
		// A fetch ends before the requests waiting for it give up
		// (DefaultReadyTimeout), so they all get its one verdict.
		TTL: ttl, Timeout: DefaultReadyTimeout * 4 / 5,
		Logger: log, Name: "provider protected-resource metadata",
	})
	return func(ctx context.Context) ([]string, error) {
		list, err := cache.Get(ctx)
		return slices.Clone(list), err
	}, nil
}

func fetchIssuers(ctx context.Context, client *http.Client, target string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("provider metadata: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("provider metadata: %s answered %d", target, resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return nil, fmt.Errorf("provider metadata: %w", err)
	}
	if len(raw) > maxMetadataBytes {
		return nil, errors.New("provider metadata: document too large")
	}
	var doc struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("provider metadata: %w", err)
	}
	if len(doc.AuthorizationServers) == 0 {
		return nil, errors.New("provider metadata: no authorization_servers")
	}
	for _, as := range doc.AuthorizationServers {
		if err := checkAbsoluteHTTPURL(as); err != nil {
			return nil, fmt.Errorf("provider metadata: authorization server %q: %w", as, err)
		}
	}
	return doc.AuthorizationServers, nil
}

// hostSet is the Host header values served: a port of "" matches any; any
// is "*".
type hostSet struct {
	any     bool
	entries map[hostPort]bool
}

type hostPort struct{ host, port string }

// loopbackHosts are served by default, on any port.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// hostSet builds the served hosts: AllowedHosts (default: the loopback
// names and the listen host when it names one) and the public base's host.
func (c HTTPConfig) hostSet(publicBase *url.URL) (hostSet, error) {
	hs := hostSet{entries: map[hostPort]bool{}}
	list := c.AllowedHosts
	if len(list) == 0 {
		list = slices.Clone(loopbackHosts)
		// net.IP's IsUnspecified is false for a name (nil).
		if h, _, err := net.SplitHostPort(cmp.Or(c.Listen, DefaultListen)); err == nil && h != "" && !net.ParseIP(h).IsUnspecified() {
			list = append(list, h)
		}
	}
	for _, h := range list {
		h = strings.TrimSpace(h)
		hs.any = hs.any || h == "*"
		if h == "" || h == "*" {
			continue
		}
		hp, ok := parseHost(h)
		if !ok {
			return hs, fmt.Errorf("allowed host %q: expected host or host:port", h)
		}
		hs.entries[hp] = true
	}
	if publicBase != nil {
		if hp, ok := parseHost(publicBase.Host); ok {
			hs.entries[hp] = true
		}
	}
	return hs, nil
}

// parseHost splits a Host value into a lower-case host and a port ("" when
// absent), accepting bracketed and bare IPv6 literals.
func parseHost(s string) (hostPort, bool) {
	if s == "" || len(s) > 300 || strings.ContainsAny(s, "/@?# \t") {
		return hostPort{}, false
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), ""
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return hostPort{}, false
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return hostPort{}, false
		}
	}
	return hostPort{host: host, port: port}, true
}

// named reports whether a Host value is served by name ("*" names nothing).
func (hs hostSet) named(host string) bool {
	hp, ok := parseHost(host)
	if !ok {
		return false
	}
	if hs.entries[hostPort{host: hp.host}] || hs.entries[hp] {
		return true
	}
	// A Host without a port is the scheme's default port.
	return hp.port == "" && (hs.entries[hostPort{hp.host, "80"}] || hs.entries[hostPort{hp.host, "443"}])
}

// hostMiddleware answers 421 Misdirected Request to a request whose Host is
// not served, so that no challenge or metadata document ever names a host
// this server was not configured for (and a DNS-rebound name reaches
// nothing). Liveness and readiness probes are exempt: they name no host and
// carry no data, and orchestrators send them with the pod address as Host.
func (st *settings) hostMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || st.hosts.any || st.hosts.named(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		const msg = "misdirected request: the Host header names a host this server does not serve; add it with --allowed-hosts or set --public-base-url"
		if r.URL.Path == "/mcp" {
			writeRPCError(w, http.StatusMisdirectedRequest, nil, mcp.INVALID_REQUEST, msg, map[string]string{"reason": "host_not_allowed"})
			return
		}
		body, _ := json.Marshal(map[string]string{"error": "misdirected_request", "error_description": msg})
		writeJSON(w, http.StatusMisdirectedRequest, body)
	})
}

// warnHosts logs, once per handler, a setup that serves only loopback
// names on a listener reachable from elsewhere.
func (st *settings) warnHosts() {
	if isLoopbackListen(st.Listen) || st.publicBase != nil || len(st.AllowedHosts) > 0 {
		return
	}
	st.logger.Warn("listening beyond loopback with neither a public base URL nor allowed hosts: only requests whose Host names a loopback address or the listen address are served (421 otherwise); set --public-base-url or --allowed-hosts",
		"listen", st.Listen)
}

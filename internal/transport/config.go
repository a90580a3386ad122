package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/metrics"
)

// Defaults applied by HTTPConfig when a field is left at its zero value.
const (
	DefaultListen            = "127.0.0.1:8787"
	DefaultMaxBodyBytes      = int64(1 << 20)
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 2 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownTimeout   = 30 * time.Second
	DefaultReadyTimeout      = 5 * time.Second
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
	// prefix) of this server, for deployments behind a proxy (flag
	// --public-base-url), e.g. https://mcp.example.com. The resource
	// identifier becomes PublicBaseURL+"/mcp". When empty it is derived from
	// each request's Host.
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
	// ReadyCheck backs /readyz; nil means always ready. It is called with a
	// DefaultReadyTimeout deadline.
	ReadyCheck func(ctx context.Context) error
	// ProtocolVersions are the MCP revisions accepted in the
	// MCP-Protocol-Version header and negotiated in initialize (flag
	// --protocol-versions). Default DefaultProtocolVersions().
	ProtocolVersions []string
	// Logger receives access logs and diagnostics; it must write to stderr
	// (or elsewhere), never stdout. Default slog.Default().
	Logger *slog.Logger

	// Server timeouts (flags --read-header-timeout, --read-timeout,
	// --write-timeout, --idle-timeout, --shutdown-timeout). WriteTimeout
	// bounds a whole tool call, so it must exceed the slowest one.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	ShutdownTimeout   time.Duration

	// Metrics, when set, receives the counts of HTTP requests, tool calls,
	// batches and authentication refusals (see Observe); the program serves
	// it on its own listener (flag --metrics-listen).
	Metrics *metrics.Metrics

	// OnListen, when set, is called by ServeHTTP with the bound address
	// before serving starts (useful with Listen ":0").
	OnListen func(addr net.Addr)
}

// settings is an HTTPConfig after defaults and validation, with the parsed
// forms the middlewares need.
type settings struct {
	HTTPConfig
	origins    map[string]bool // canonical scheme://host:port
	publicBase *url.URL        // nil: derive from the request
	versions   []string
	logger     *slog.Logger
}

// Validate reports the first configuration error, if any.
func (c HTTPConfig) Validate() error {
	_, err := c.settle()
	return err
}

func (c HTTPConfig) settle() (*settings, error) {
	st := &settings{HTTPConfig: c}
	if st.Listen == "" {
		st.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(st.Listen); err != nil {
		return nil, fmt.Errorf("listen address %q: %w", st.Listen, err)
	}
	if st.MaxBodyBytes == 0 {
		st.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if st.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("max body bytes must be positive, got %d", st.MaxBodyBytes)
	}
	st.ReadHeaderTimeout = orDefault(st.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	st.ReadTimeout = orDefault(st.ReadTimeout, DefaultReadTimeout)
	st.WriteTimeout = orDefault(st.WriteTimeout, DefaultWriteTimeout)
	st.IdleTimeout = orDefault(st.IdleTimeout, DefaultIdleTimeout)
	st.ShutdownTimeout = orDefault(st.ShutdownTimeout, DefaultShutdownTimeout)

	st.logger = c.Logger
	if st.logger == nil {
		st.logger = slog.Default()
	}

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

	if c.PublicBaseURL != "" {
		u, err := parsePublicBase(c.PublicBaseURL)
		if err != nil {
			return nil, fmt.Errorf("public base URL %q: %w", c.PublicBaseURL, err)
		}
		st.publicBase = u
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
	return st, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
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
	port := u.Port()
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
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
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

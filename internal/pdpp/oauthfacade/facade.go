package oauthfacade

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/docache"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
)

// Routes served by the facade.
const (
	PathMetadata  = "/.well-known/oauth-authorization-server"
	PathOpenID    = "/.well-known/openid-configuration"
	PathAuthorize = "/oauth/authorize"
)

// Bounds and lifetimes.
const (
	// DefaultTTL is how long the provider's metadata is served from the cache.
	DefaultTTL = 10 * time.Minute
	// DefaultTimeout bounds one fetch of the provider's metadata (every candidate
	// well-known URL together).
	DefaultTimeout = 5 * time.Second
	// failMemo is how long a failed fetch answers for itself, counted from when it
	// ends, so a provider that is down or hangs costs one fetch per failMemo, not
	// one per request.
	failMemo = 5 * time.Second
	// maxMetadataBytes bounds the provider's metadata document.
	maxMetadataBytes = 256 << 10
	// MaxQueryBytes bounds the query of an authorization request passed on; an
	// authorization_details array for one source is well under 1 KiB.
	MaxQueryBytes = 8 << 10
	// maxSourceBytes bounds --oauth-source.
	maxSourceBytes = 512
	// DefaultMaxConcurrent bounds the facade's requests in progress at once
	// (each waits at most DefaultTimeout for the one fetch in flight).
	DefaultMaxConcurrent = 64
)

// Config configures a facade.
type Config struct {
	// Source is the connector id or connector URL added as connector_id.
	Source string
	// Issuer returns the provider authorization server's issuer identifier: the one
	// given with --authorization-servers, or the first the provider's own
	// protected-resource metadata names.
	Issuer func(ctx context.Context) (string, error)
	// Client fetches the provider's metadata; no credentials are ever sent. Default:
	// a client with DefaultTimeout.
	Client *http.Client
	// TTL is the cache lifetime of the provider's metadata; default DefaultTTL.
	TTL time.Duration
	// Logger receives diagnostics; default slog.Default().
	Logger *slog.Logger
	// MaxConcurrent bounds the facade's requests served at once; default
	// DefaultMaxConcurrent.
	MaxConcurrent int
}

// Facade serves the facade's routes. It is safe for concurrent use.
type Facade struct {
	source string
	issuer func(context.Context) (string, error)
	client *http.Client
	now    func() time.Time

	// The provider's metadata and authorization endpoint (see docache): one
	// fetch at a time within DefaultTimeout, a failure remembered for
	// failMemo from when it ends, the previous document served while a
	// refresh fails.
	meta *docache.Cache[metadata]
	// slots bounds the facade's requests served at once; one more is answered
	// 503 at once rather than queued behind a provider that hangs.
	slots chan struct{}
}

// metadata is the cached provider document and its authorization endpoint.
type metadata struct {
	doc      map[string]json.RawMessage
	endpoint *url.URL
}

// New checks cfg and returns a facade.
func New(cfg Config) (*Facade, error) {
	if err := CheckSource(cfg.Source); err != nil {
		return nil, err
	}
	if cfg.Issuer == nil {
		return nil, errors.New("oauth facade: no provider issuer")
	}
	f := &Facade{source: cfg.Source, issuer: cfg.Issuer, client: cmp.Or(cfg.Client, &http.Client{Timeout: DefaultTimeout}), now: time.Now,
		slots: make(chan struct{}, cmp.Or(max(cfg.MaxConcurrent, 0), DefaultMaxConcurrent))}
	f.meta = docache.New(docache.Config[metadata]{
		Fetch: f.fetch,
		TTL:   cmp.Or(max(cfg.TTL, 0), DefaultTTL), Timeout: DefaultTimeout, FailMemo: failMemo,
		Now:    func() time.Time { return f.now() },
		Logger: cfg.Logger, Name: "oauth facade: provider authorization server metadata",
	})
	return f, nil
}

// CheckSource validates --oauth-source: an absolute http(s) URL without user
// information or fragment, or a connector id of letters, digits and . _ : -.
func CheckSource(s string) error {
	switch {
	case s == "":
		return errors.New("oauth source is empty")
	case len(s) > maxSourceBytes:
		return fmt.Errorf("oauth source is longer than %d bytes", maxSourceBytes)
	case strings.Contains(s, "://"):
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return fmt.Errorf("oauth source %q: a connector URL must be an absolute http(s) URL without user information or fragment", s)
		}
		return nil
	}
	if strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-')
	}) >= 0 {
		return fmt.Errorf("oauth source %q: a connector id holds only letters, digits and . _ : -", s)
	}
	return nil
}

// Routes returns the facade's handlers by path, for transport.HTTPConfig.ExtraRoutes.
func (f *Facade) Routes() map[string]http.Handler {
	meta := f.bounded(f.serveMetadata)
	return map[string]http.Handler{
		PathMetadata:  meta,
		PathOpenID:    meta,
		PathAuthorize: f.bounded(f.serveAuthorize),
	}
}

// bounded serves h within the facade's slots: when all are taken the request
// is answered 503 with Retry-After at once.
func (f *Facade) bounded(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case f.slots <- struct{}{}:
			defer func() { <-f.slots }()
			h(w, r)
		default:
			unavailable(w, "this server is answering as many authorization requests as it serves at once; retry later")
		}
	})
}

// AuthorizationServers names this server's public base as the only authorization
// server, for transport.HTTPConfig.AuthorizationServersFunc.
func (f *Facade) AuthorizationServers(ctx context.Context) ([]string, error) {
	base := transport.PublicBaseURL(ctx)
	if base == "" {
		return nil, errors.New("oauth facade: no public base URL for this request")
	}
	return []string{base}, nil
}

// fetch reads the provider's metadata from the well-known URLs of its issuer, in
// the order clients try them (RFC 8414 first, then OpenID Connect discovery), and
// checks it as a client would: the issuer it states is the one asked for, and its
// authorization endpoint is an absolute http(s) URL.
func (f *Facade) fetch(ctx context.Context) (metadata, error) {
	iss, err := f.issuer(ctx)
	if err != nil {
		return metadata{}, fmt.Errorf("provider issuer: %w", err)
	}
	candidates, err := metadataURLs(iss)
	if err != nil {
		return metadata{}, err
	}
	for _, target := range candidates {
		doc, found, err := f.get(ctx, target)
		if err != nil {
			return metadata{}, err
		}
		if !found {
			continue
		}
		var stated string
		if json.Unmarshal(doc["issuer"], &stated) != nil || strings.TrimRight(stated, "/") != strings.TrimRight(iss, "/") {
			return metadata{}, fmt.Errorf("%s states issuer %q, not %q", target, stated, iss)
		}
		var ep string
		_ = json.Unmarshal(doc["authorization_endpoint"], &ep)
		u, err := url.Parse(ep)
		if ep == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
			return metadata{}, fmt.Errorf("%s: authorization_endpoint %q is not an absolute http(s) URL", target, ep)
		}
		return metadata{doc, u}, nil
	}
	return metadata{}, fmt.Errorf("no authorization server metadata at %s", strings.Join(candidates, ", "))
}

// metadataURLs are the well-known URLs of an issuer: RFC 8414 section 3.1 (path
// inserted), then OpenID Connect discovery (path inserted, then appended).
func metadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("provider issuer %q is not an absolute http(s) URL", issuer)
	}
	origin, path := u.Scheme+"://"+u.Host, strings.TrimRight(u.Path, "/")
	out := []string{origin + PathMetadata + path, origin + PathOpenID + path}
	if path != "" {
		out = append(out, origin+path+PathOpenID)
	}
	return out, nil
}

// get fetches one metadata URL; found is false on a 4xx (try the next one).
func (f *Facade) get(ctx context.Context, target string) (doc map[string]json.RawMessage, found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("provider metadata: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return nil, false, nil
	case resp.StatusCode != http.StatusOK:
		return nil, false, fmt.Errorf("provider metadata: %s answered %d", target, resp.StatusCode)
	case err != nil:
		return nil, false, fmt.Errorf("provider metadata: %w", err)
	case len(raw) > maxMetadataBytes:
		return nil, false, fmt.Errorf("provider metadata: %s is larger than %d bytes", target, maxMetadataBytes)
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return nil, false, fmt.Errorf("provider metadata: %s is not a JSON object", target)
	}
	return doc, true, nil
}

// serveMetadata answers the provider's metadata with this server as issuer and
// authorization endpoint.
func (f *Facade) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if !transport.MetadataMethod(w, r) {
		return
	}
	m, err := f.meta.Get(r.Context())
	if err != nil {
		unavailable(w, "the provider's authorization server metadata could not be loaded; retry later")
		return
	}
	base := transport.PublicBaseURL(r.Context())
	out := maps.Clone(m.doc)
	out["issuer"], _ = json.Marshal(base)
	out["authorization_endpoint"], _ = json.Marshal(base + PathAuthorize)
	// An RFC 9207 iss in the provider's authorization response names the provider,
	// not this issuer: advertising it would make clients that check it require a
	// value they can never get.
	delete(out, "authorization_response_iss_parameter_supported")
	writeJSON(w, http.StatusOK, out)
}

// serveAuthorize redirects the browser to the provider's authorization endpoint with
// the same query, plus connector_id when the client named no source.
func (f *Facade) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeText(w, http.StatusMethodNotAllowed, "method not allowed: the authorization endpoint takes GET")
		return
	}
	raw := r.URL.RawQuery
	if len(raw) > MaxQueryBytes {
		writeText(w, http.StatusRequestURITooLong, fmt.Sprintf("the authorization request is longer than %d bytes", MaxQueryBytes))
		return
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		writeText(w, http.StatusBadRequest, "the authorization request's query is malformed")
		return
	}
	m, err := f.meta.Get(r.Context())
	if err != nil {
		unavailable(w, "the provider's authorization server metadata could not be loaded; retry later")
		return
	}
	if !q.Has("connector_id") && !q.Has("authorization_details") && !q.Has("request_uri") {
		raw = join(raw, "connector_id="+url.QueryEscape(f.source))
	}
	target := *m.endpoint
	target.RawQuery = join(m.endpoint.RawQuery, raw)
	h := w.Header()
	h.Set("Location", target.String())
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusFound)
}

// join joins two raw queries.
func join(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "&" + b
}

func unavailable(w http.ResponseWriter, why string) {
	w.Header().Set("Retry-After", "30")
	writeJSON(w, http.StatusServiceUnavailable, map[string]string{
		"error":             "temporarily_unavailable",
		"error_description": why,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	write(w, status, "application/json", b)
}

func writeText(w http.ResponseWriter, status int, msg string) {
	write(w, status, "text/plain; charset=utf-8", []byte(msg+"\n"))
}

func write(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

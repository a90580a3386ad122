package demoas

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
)

// DefaultAccessTokenTTL is an access token's life, as at the reference authorization server.
const DefaultAccessTokenTTL = 600 * time.Second

// Bounds of what the server holds and reads. A full table drops entries past their time,
// then its oldest (see table), so a flood costs memory up to these bounds only.
const (
	// MaxClients bounds registered clients; the oldest registration goes first.
	MaxClients = 1024
	// MaxPending bounds authorization requests awaiting consent, each for at most PendingTTL.
	MaxPending = 1024
	// MaxCodes bounds codes held: unused ones for CodeTTL, used ones as long, to catch a replay.
	MaxCodes = 1024
	// MaxGrants bounds grants (token families); one dropped for room makes its tokens 401.
	MaxGrants = 4096
	// MaxAccessTokens bounds access tokens held. Expired ones are kept until room is
	// needed, so the resource server can still say grant_expired rather than "unknown".
	MaxAccessTokens = 8192
	// MaxRefreshTokens bounds refresh tokens, used ones included (a used one reveals a replay).
	MaxRefreshTokens = 8192

	// PendingTTL is how long a consent page stays answerable.
	PendingTTL = 10 * time.Minute
	// CodeTTL is how long an authorization code can be exchanged.
	CodeTTL = 60 * time.Second
	// RefreshTokenTTL is how long a refresh token can be used.
	RefreshTokenTTL = 24 * time.Hour

	// Bounds per client address (an IPv4 address or IPv6 /64): one address's flood drops
	// only its own entries. Registrations, grants and tokens go only when stale (expired;
	// grant revoked; registration never used within PendingTTL, or unused for
	// RefreshTokenTTL): a table full of live entries refuses a newcomer (503) rather than
	// drop another address's live grant.
	MaxClientsPerAddress = 64
	MaxGrantsPerAddress  = 64
	// maxTokensPerAddress bounds the access and refresh tokens issued to one
	// address (a grant refreshed often holds several until they expire).
	maxTokensPerAddress = 4 * MaxGrantsPerAddress
	// maxPendingPerAddress bounds consent pages and codes per address.
	maxPendingPerAddress = 64

	// maxBodyBytes bounds a registration, token or consent body: the largest legitimate one
	// (maxRedirectURIs URIs of maxURIBytes) is under 17 KiB.
	maxBodyBytes = 32 << 10
	// maxQueryBytes bounds an authorization request's query, authorization_details included.
	maxQueryBytes = 8 << 10
	// maxRedirectURIs and maxURIBytes bound one client's redirect URIs.
	maxRedirectURIs = 8
	maxURIBytes     = 2048
	// maxNameBytes bounds a client_name.
	maxNameBytes = 200
)

// DataAccessType is the PDPP authorization_details type.
const DataAccessType = "https://pdpp.dev/data-access"

// Source is one data source a person can share: a connector.
type Source struct {
	// ID is the connector id (for example "loom"); URL its registry URL (for example
	// "https://registry.pdpp.dev/connectors/loom"). Either names it in connector_id or
	// in authorization_details.
	ID, URL string
	// Name is shown on the consent page.
	Name string
}

// Config configures an authorization server.
type Config struct {
	// Sources are what a grant can cover; at least one.
	Sources []Source
	// AccessTokenTTL is the life of an access token; default DefaultAccessTokenTTL,
	// at least one second.
	AccessTokenTTL time.Duration
	// AutoConsent approves every valid authorization request at once, redirecting with the
	// code and no consent page: for automated runs only.
	AutoConsent bool
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// DocumentClient, for tests only (no flag sets it), fetches client metadata documents
	// through its Transport instead of the server's own (public addresses only), and lifts
	// the public-host rule on the client_id URL, so a test can serve a document from an
	// httptest TLS server on loopback. Timeout, size and redirect rules stay.
	DocumentClient *http.Client
	// AllowLoopbackDocuments lets client metadata documents be fetched from loopback hosts
	// (localhost, 127.0.0.0/8, ::1), dialled on loopback only and with their TLS certificate
	// unchecked (a local test server's is self-signed). Demo commands set it from
	// LoopbackDocumentsFlag; off, a loopback client_id is refused naming that flag.
	AllowLoopbackDocuments bool
}

// Kind is what a grant is.
type Kind int

const (
	// KindClient is a grant over one source (grant_id).
	KindClient Kind = iota
	// KindPackage is a grant over the sources the person picked (grant_package_id).
	KindPackage
)

// State is what an access token is worth now.
type State int

const (
	// Active: the token may be used.
	Active State = iota
	// Expired: the token outlived AccessTokenTTL.
	Expired
	// Revoked: its grant was revoked (a refresh token or code was replayed).
	Revoked
)

// Grant is what an access token stands for.
type Grant struct {
	// ID is the grant_id (client grant) or grant_package_id (package grant).
	ID string
	// ClientID is the registered client the grant was issued to.
	ClientID string
	Kind     Kind
	// Sources are the ids of the sources covered: exactly one for a client grant.
	Sources []string
}

// Server is one authorization server. It is safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	sources []Source
	now     func() time.Time

	mu      sync.Mutex
	clients *table[string, *client]
	pending *table[string, *pending]
	codes   *table[[32]byte, *code]
	grants  *table[string, *grantRec]
	access  *table[[32]byte, *accessRec]
	refresh *table[[32]byte, *refreshRec]
	docs    *table[string, *client] // fetched client metadata documents

	docHTTP    *http.Client
	docLookup  func(ctx context.Context, network, host string) ([]netip.Addr, error) // the document fetcher's resolver
	fetches    singleflight.Group                                                    // one fetch per document URL at a time
	fetchSlots *semaphore.Weighted                                                   // maxFetches
	fetching   map[string]int                                                        // fetches started per client address (at most maxFetchesPerAddress); under mu
}

type client struct {
	id           string
	name         string
	redirectURIs []string
	issuedAt     time.Time
	lastUsed     time.Time // last token issued to it; zero: never
	// confirmed are redirect URIs a person consented to: errors may be redirected there.
	confirmed map[string]bool
}

// stale reports a registration that may go: never used within PendingTTL of registering,
// or unused for RefreshTokenTTL (its grants have lapsed).
func (c *client) stale(now time.Time) bool {
	if c.lastUsed.IsZero() {
		return now.After(c.issuedAt.Add(PendingTTL))
	}
	return now.After(c.lastUsed.Add(RefreshTokenTTL))
}

// grantRec is a grant and its family state.
type grantRec struct {
	Grant
	revoked bool
	owner   string // the address its code was exchanged from
}

type accessRec struct {
	grantID string
	expires time.Time
}

type refreshRec struct {
	grantID  string
	clientID string
	expires  time.Time
	used     bool
}

// New builds a server.
func New(cfg Config) (*Server, error) {
	if len(cfg.Sources) == 0 {
		return nil, errors.New("demoas: no sources")
	}
	for _, src := range cfg.Sources {
		if src.ID == "" {
			return nil, errors.New("demoas: a source has no id")
		}
	}
	if cfg.AccessTokenTTL == 0 {
		cfg.AccessTokenTTL = DefaultAccessTokenTTL
	}
	if cfg.AccessTokenTTL < time.Second {
		return nil, fmt.Errorf("demoas: access token lifetime %v is under one second", cfg.AccessTokenTTL)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:     cfg,
		log:     log,
		sources: cfg.Sources,
		now:     time.Now,
		pending: newTable[string, *pending](MaxPending, maxPendingPerAddress, nil),
		codes:   newTable[[32]byte, *code](MaxCodes, maxPendingPerAddress, nil),
		docs:    newTable[string, *client](MaxDocuments, 0, nil),

		docLookup:  net.DefaultResolver.LookupNetIP,
		fetchSlots: semaphore.NewWeighted(maxFetches),
		fetching:   map[string]int{},
	}
	// These tables have a stale rule, so they keep what is live; a token of a revoked or
	// forgotten grant is worth nothing: stale.
	s.clients = newTable[string](MaxClients, MaxClientsPerAddress, (*client).stale)
	s.grants = newTable[string](MaxGrants, MaxGrantsPerAddress, func(g *grantRec, _ time.Time) bool { return g.revoked })
	s.access = newTable[[32]byte](MaxAccessTokens, maxTokensPerAddress, func(a *accessRec, _ time.Time) bool { return s.grantGone(a.grantID) })
	s.refresh = newTable[[32]byte](MaxRefreshTokens, maxTokensPerAddress, func(r *refreshRec, _ time.Time) bool { return s.grantGone(r.grantID) })
	s.docHTTP = s.documentHTTPClient(cfg.DocumentClient)
	return s, nil
}

// grantGone reports a grant revoked or no longer held. The caller holds s.mu.
func (s *Server) grantGone(id string) bool {
	g, ok := s.grants.get(id)
	return !ok || g.revoked
}

// clientAddr is the address a request is bounded under: the peer's IPv4 address, or the
// /64 of its IPv6 address (one host's usual allocation).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// busy answers a request that would need room held by live entries.
func busy(w http.ResponseWriter, what string) {
	w.Header().Set("Retry-After", "60")
	oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "this demo authorization server holds as many live "+what+" as it can; try again later")
}

// Register mounts the server's routes on mux.
func (s *Server) Register(mux *http.ServeMux) {
	mux.Handle("/.well-known/oauth-authorization-server", cors(http.HandlerFunc(s.serveMetadata)))
	mux.Handle("/oauth/register", cors(http.HandlerFunc(s.serveRegister)))
	mux.HandleFunc("/oauth/authorize", s.serveAuthorize)
	mux.HandleFunc("/oauth/consent", s.serveConsent)
	mux.Handle("/oauth/token", cors(http.HandlerFunc(s.serveToken)))
}

// Lookup resolves an access token to its grant and state; ok is false for a token this
// server never issued or no longer holds.
func (s *Server) Lookup(token string) (g Grant, st State, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.access.get(hash(token))
	if !ok {
		return Grant{}, 0, false
	}
	rec, ok := s.grants.get(a.grantID)
	if !ok {
		return Grant{}, 0, false
	}
	g = rec.Grant
	g.Sources = append([]string(nil), rec.Sources...)
	switch {
	case rec.revoked:
		return g, Revoked, true
	case s.now().After(a.expires):
		return g, Expired, true
	}
	return g, Active, true
}

// lookupClient returns the client a client_id names: a registered one, or the one its
// client metadata document describes (fetched when needed, for r's client address).
func (s *Server) lookupClient(r *http.Request, id string) (*client, error) {
	if isDocumentID(id) {
		return s.documentClient(r.Context(), id, clientAddr(r))
	}
	s.mu.Lock()
	c, ok := s.clients.get(id)
	s.mu.Unlock()
	if !ok {
		return nil, errors.New("unknown client_id: register the client first, or use the https URL of its client metadata document")
	}
	return c, nil
}

// source finds a source by id or registry URL.
func (s *Server) source(ref string) (Source, bool) {
	for _, src := range s.sources {
		if ref == src.ID || (src.URL != "" && ref == src.URL) {
			return src, true
		}
	}
	return Source{}, false
}

// issuer is this server's issuer identifier, derived from the request like the RS's base URL.
func issuer(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// secret returns a random token with a readable prefix: 32 bytes from crypto/rand.
func secret(prefix string) string { return random(prefix, 32) }

// newID returns a random identifier (not a secret): 12 bytes from crypto/rand.
func newID(prefix string) string { return random(prefix, 12) }

func random(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// hash is how tokens, codes and refresh tokens are kept: only their SHA-256.
func hash(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// writeJSON answers with a JSON body that is never cached.
func writeJSON(w http.ResponseWriter, status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// oauthError answers an RFC 6749 error body.
func oauthError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// cors lets browser-based clients (MCP Inspector's web UI) read the metadata, register and
// exchange codes: the answers carry no cookie-bound state, so any origin may read them.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// methodNotAllowed answers 405 naming the allowed methods.
func methodNotAllowed(w http.ResponseWriter, allow ...string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "method not allowed; use "+strings.Join(allow, " or "))
}

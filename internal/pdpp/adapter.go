package pdpp

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/rs"
)

// Adapter implements mcptools.Handlers and mcptools.ResourceHandlers.
type Adapter struct {
	rs    *rs.Client
	token rs.TokenSource
	log   *slog.Logger
	kinds *kindCache
}

var (
	_ mcptools.Handlers         = (*Adapter)(nil)
	_ mcptools.ResourceHandlers = (*Adapter)(nil)
)

// Config configures an Adapter.
type Config struct {
	RS     *rs.Client
	Token  rs.TokenSource
	Logger *slog.Logger
}

// New returns an Adapter over cfg.RS.
func New(cfg Config) *Adapter {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Adapter{rs: cfg.RS, token: cfg.Token, log: log, kinds: newKindCache(10*time.Minute, 4096)}
}

// do sends a request built by a generated builder, after the owner-token check.
func (a *Adapter) do(ctx context.Context, req *http.Request, build error) (*rs.Response, error) {
	if build != nil {
		return nil, rs.AdapterError("invalid_request", build.Error(), "")
	}
	if err := a.refuseOwner(ctx); err != nil {
		return nil, err
	}
	return a.rs.Do(ctx, req)
}

// withQuery adds pre-encoded parameters (typed filters, expand limits) to req.
func withQuery(req *http.Request, extra ...url.Values) *http.Request {
	if req == nil {
		return nil
	}
	empty := true
	for _, vals := range extra {
		empty = empty && len(vals) == 0
	}
	if empty {
		return req
	}
	q := req.URL.Query()
	for _, vals := range extra {
		for k, v := range vals {
			q[k] = append(q[k], v...)
		}
	}
	req.URL.RawQuery = q.Encode()
	return req
}

// refuseOwner fails closed for owner tokens: the first call made with a token
// reads the RS's description of the bearer (GET /v1/schema) and remembers only
// the verdict and the declared display roles, keyed by a hash of the token. An RS that cannot answer defers the
// decision to the call itself, which carries the same token.
func (a *Adapter) refuseOwner(ctx context.Context) error {
	tok, err := a.token(ctx)
	if err != nil {
		return rs.AdapterError("credential_unavailable", err.Error(), "")
	}
	key := sha256.Sum256([]byte(tok))
	if e, ok := a.kinds.get(key); ok {
		return ownerErr(e.kind)
	}
	view := rsclient.GetSchemaParamsView("compact")
	req, berr := rsclient.NewGetSchemaRequest(a.rs.BaseURL(), &rsclient.GetSchemaParams{View: &view})
	if berr != nil {
		return nil
	}
	resp, err := a.rs.Do(ctx, req)
	if err != nil {
		if re, ok := err.(*rs.Error); ok && re.Status == http.StatusUnauthorized {
			return err
		}
		return nil
	}
	kind := bearerKind(resp.Body)
	a.kinds.put(key, kindEntry{kind: kind, roles: evidence.AllRoles(resp.Body)})
	return ownerErr(kind)
}

// declaredRoles returns the display roles the grant's schema declared for
// stream, as read by the token check; it makes no RS call of its own.
func (a *Adapter) declaredRoles(ctx context.Context, stream string) evidence.Roles {
	tok, err := a.token(ctx)
	if err != nil {
		return nil
	}
	if e, ok := a.kinds.get(sha256.Sum256([]byte(tok))); ok {
		return e.roles[stream]
	}
	return nil
}

func bearerKind(body []byte) string {
	var doc struct {
		Bearer struct {
			TokenKind string `json:"token_kind"`
			Kind      string `json:"pdpp_token_kind"`
		} `json:"bearer"`
	}
	_ = json.Unmarshal(body, &doc)
	if doc.Bearer.TokenKind != "" {
		return doc.Bearer.TokenKind
	}
	return doc.Bearer.Kind
}

func ownerErr(kind string) error {
	if kind == "owner" {
		return rs.AdapterError("owner_token_refused",
			"this adapter reads only through grant-scoped client tokens and refuses owner tokens; run `pdpp connect <provider-url>` to obtain a client grant", "")
	}
	return nil
}

// kindCache remembers token kinds by token hash for a short time.
type kindCache struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	items map[[32]byte]kindEntry
}

type kindEntry struct {
	kind    string
	roles   map[string]evidence.Roles
	expires time.Time
}

func newKindCache(ttl time.Duration, max int) *kindCache {
	return &kindCache{ttl: ttl, max: max, items: map[[32]byte]kindEntry{}}
}

func (c *kindCache) get(k [32]byte) (kindEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok || time.Now().After(e.expires) {
		return kindEntry{}, false
	}
	return e, true
}

func (c *kindCache) put(k [32]byte, e kindEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) >= c.max {
		now := time.Now()
		for key, e := range c.items {
			if now.After(e.expires) || len(c.items) >= c.max {
				delete(c.items, key)
			}
		}
	}
	e.expires = time.Now().Add(c.ttl)
	c.items[k] = e
}

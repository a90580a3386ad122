package tokencheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// Verdict is what is known about a bearer.
type Verdict int

const (
	// Unavailable: the check could not complete (RS 5xx, timeout,
	// unreachable, an answer that does not state the token kind). Nothing
	// may be read with the token; the caller may retry.
	Unavailable Verdict = iota
	// Client: a grant-scoped client token; calls go ahead.
	Client
	// Owner: an owner token, which this server refuses.
	Owner
	// Rejected: the RS answered 401 to the token.
	Rejected
)

func (v Verdict) String() string {
	switch v {
	case Client:
		return "client"
	case Owner:
		return "owner"
	case Rejected:
		return "rejected"
	}
	return "unavailable"
}

// Result is one verdict with what goes with it.
type Result struct {
	Verdict Verdict
	// Err is the typed error a call made with this token fails with: the
	// RS's own 401 envelope (Rejected), owner_token_refused (Owner) or
	// token_check_unavailable (Unavailable); nil for Client.
	Err *rs.Error
	// roles are the display roles the grant's schema declares, by stream.
	roles map[string]evidence.Roles
}

// Codes of the errors this package makes.
const (
	CodeOwnerRefused = "owner_token_refused"
	CodeUnavailable  = "token_check_unavailable"
)

// OwnerMessage says why an owner token is refused and what to do instead.
const OwnerMessage = "this server reads only through grant-scoped client tokens and refuses owner tokens; run `pdpp connect <provider-url>` to obtain a client grant"

// Defaults of Options.
const (
	// DefaultTTL is how long a client or owner verdict is trusted. A token
	// revoked meanwhile is caught by the RS's 401 on the next data call,
	// which evicts the entry.
	DefaultTTL = 10 * time.Minute
	// DefaultMaxEntries bounds the cache (32-byte key plus the declared
	// roles of one grant per entry).
	DefaultMaxEntries = 4096
	// DefaultMaxInFlight bounds the distinct tokens being checked at once;
	// beyond it a new token's check is unavailable (retry).
	DefaultMaxInFlight = 256
	// RejectedTTL is how long a token the RS answered 401 stays refused
	// without asking the RS again, so a client that keeps retrying an
	// expired or revoked token costs the RS one read per RejectedTTL, not
	// one per request. Short, for a token is rarely rejected by mistake.
	RejectedTTL = 30 * time.Second
	// MaxRejectedEntries bounds the rejected verdicts kept. They live apart
	// from client and owner verdicts, so a flood of made-up tokens can
	// evict only other rejected ones.
	MaxRejectedEntries = 1024
)

// Options tune a Checker; zero values take the defaults.
type Options struct {
	TTL         time.Duration
	MaxEntries  int
	MaxInFlight int
	// Timeout bounds one check's RS reads (compact view plus the plain
	// fallback). Default rs.DefaultTimeout.
	Timeout time.Duration
}

// Checker establishes and caches verdicts. It is safe for concurrent use.
type Checker struct {
	rs       *rs.Client
	token    rs.TokenSource
	timeout  time.Duration
	cache    *cache
	rejected *cache // Rejected verdicts, RejectedTTL and MaxRejectedEntries
	flights  *flights
}

// New returns a Checker reading through client; token yields the bearer of
// the current call (the same source client sends).
func New(client *rs.Client, token rs.TokenSource, opt Options) *Checker {
	if opt.TTL <= 0 {
		opt.TTL = DefaultTTL
	}
	if opt.MaxEntries <= 0 {
		opt.MaxEntries = DefaultMaxEntries
	}
	if opt.MaxInFlight <= 0 {
		opt.MaxInFlight = DefaultMaxInFlight
	}
	if opt.Timeout <= 0 {
		opt.Timeout = rs.DefaultTimeout
	}
	return &Checker{
		rs: client, token: token, timeout: opt.Timeout,
		cache:    newCache(opt.TTL, opt.MaxEntries),
		rejected: newCache(RejectedTTL, MaxRejectedEntries),
		flights:  newFlights(opt.MaxInFlight),
	}
}

// Key is the cache key of a token: its SHA-256, so no token is kept.
func Key(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// Check returns the verdict for the bearer of ctx: from the cache, or by
// reading the RS (one read shared by concurrent callers with the same
// token). A caller whose ctx ends first gets Unavailable.
func (c *Checker) Check(ctx context.Context) Result {
	tok, err := c.token(ctx)
	if err != nil {
		return Result{Verdict: Unavailable, Err: rs.AdapterError("credential_unavailable", err.Error(), "")}
	}
	key := Key(tok)
	if r, ok := c.cache.get(key); ok {
		return r
	}
	if r, ok := c.rejected.get(key); ok {
		return r
	}
	f, leader, ok := c.flights.join(key)
	if !ok {
		return unavailable("too many new tokens are being checked at once")
	}
	if leader {
		// The read outlives a leader that gives up, so that the callers
		// sharing it still get an answer; it keeps ctx's values (the
		// bearer) and is bounded by c.timeout.
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
			defer cancel()
			r := c.read(rctx)
			switch r.Verdict {
			case Client, Owner:
				c.cache.put(key, r)
			case Rejected:
				c.rejected.put(key, r)
			}
			c.flights.finish(key, f, r)
		}()
	}
	select {
	case <-f.done:
		return f.res
	case <-ctx.Done():
		return unavailable("the call ended before the token check completed")
	}
}

// Forget evicts the verdict of the bearer of ctx, after the RS answered 401
// to it.
func (c *Checker) Forget(ctx context.Context) {
	if tok, err := c.token(ctx); err == nil {
		c.cache.remove(Key(tok))
	}
}

// Roles returns the display roles the bearer's grant declares for stream,
// as read by the check; it makes no RS call.
func (c *Checker) Roles(ctx context.Context, stream string) evidence.Roles {
	tok, err := c.token(ctx)
	if err != nil {
		return nil
	}
	if r, ok := c.cache.get(Key(tok)); ok {
		return r.roles[stream]
	}
	return nil
}

// read asks the RS: the compact schema view first, the plain document when
// the compact view is refused as a bad request.
func (c *Checker) read(ctx context.Context) Result {
	view := rsclient.GetSchemaParamsViewCompact
	body, err := c.get(ctx, &rsclient.GetSchemaParams{View: &view})
	var re *rs.Error
	if errors.As(err, &re) && refusesView(re.Status) {
		body, err = c.get(ctx, &rsclient.GetSchemaParams{})
	}
	if err != nil {
		if errors.As(err, &re) && re.Status == http.StatusUnauthorized {
			return Result{Verdict: Rejected, Err: re}
		}
		code := "rs_error"
		if errors.As(err, &re) {
			code = re.Code()
		}
		return unavailable("the RS schema read failed (" + code + ")")
	}
	kind, ok := tokenKind(body)
	switch {
	case !ok:
		return unavailable("the RS schema answer is not a JSON document")
	case kind == "owner":
		return Result{Verdict: Owner, Err: rs.AdapterError(CodeOwnerRefused, OwnerMessage, "")}
	case kind == "client":
		return Result{Verdict: Client, roles: evidence.AllRoles(body)}
	}
	return unavailable("the RS schema answer does not state a known token kind for this bearer")
}

func (c *Checker) get(ctx context.Context, p *rsclient.GetSchemaParams) ([]byte, error) {
	req, err := rsclient.NewGetSchemaRequest(c.rs.BaseURL(), p)
	if err != nil {
		return nil, rs.AdapterError("invalid_request", err.Error(), "")
	}
	resp, err := c.rs.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// refusesView reports whether an RS status means "this query is not
// understood" (an RS without the compact view), not a verdict on the token.
func refusesView(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusNotAcceptable, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// tokenKind reads bearer.token_kind (or pdpp_token_kind, or the bearer
// scope) from a schema document; ok is false when body is not a JSON object.
func tokenKind(body []byte) (kind string, ok bool) {
	var doc struct {
		Bearer *struct {
			TokenKind string `json:"token_kind"`
			Kind      string `json:"pdpp_token_kind"`
			Scope     string `json:"scope"`
		} `json:"bearer"`
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &doc) != nil {
		return "", false
	}
	if doc.Bearer == nil {
		return "", true
	}
	b := doc.Bearer
	switch {
	case b.TokenKind == "owner" || b.Kind == "owner" || b.Scope == "owner":
		return "owner", true
	case b.TokenKind != "":
		return b.TokenKind, true
	case b.Kind != "":
		return b.Kind, true
	case b.Scope == "grant":
		return "client", true
	}
	return "", true
}

func unavailable(why string) Result {
	return Result{Verdict: Unavailable, Err: UnavailableError(why)}
}

// UnavailableError is the typed, retryable error of a check that could not
// complete; no data request is made after it.
func UnavailableError(why string) *rs.Error {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"type": "adapter_error", "code": CodeUnavailable, "retryable": true,
		"message": "the token could not be checked with the RS (" + why + "), so nothing was read; retry shortly",
	}})
	return &rs.Error{Envelope: b}
}

package tokencheck

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
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
	// Rejected: the RS says the token itself is no good (a token-level
	// code, see rs.ClassToken: inactive, unknown, expired, revoked).
	Rejected
	// Unusable: the RS refuses the token its own schema for another reason
	// (a package token's 404 "Unknown source", a 403): it will never read
	// through this server, which needs a single-source client grant.
	Unusable
)

func (v Verdict) String() string {
	if names := [...]string{"unavailable", "client", "owner", "rejected", "unusable"}; v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return "unavailable"
}

// Result is one verdict with what goes with it.
type Result struct {
	Verdict Verdict
	// Err is the typed error a call made with this token fails with: the
	// RS's own envelope (Rejected), owner_token_refused (Owner),
	// client_grant_required (Unusable) or token_check_unavailable
	// (Unavailable); nil for Client.
	Err *rs.Error
	// roles are the display roles the grant's schema declares, by stream.
	roles map[string]evidence.Roles
	// grant is the grant id the schema names for a client token (clipped),
	// or "".
	grant string
}

// maxGrantID bounds the grant id kept as a tenant's name.
const maxGrantID = 128

// Tenant names the verified identity of a client verdict for fair shares:
// "grant:" and the grant id when the RS names one (every token of one grant
// is one tenant), otherwise "" (the caller keys on a hash of the token).
func (r Result) Tenant() string {
	if r.Verdict != Client || r.grant == "" {
		return ""
	}
	return "grant:" + r.grant
}

// Codes of the errors this package makes.
const (
	CodeOwnerRefused        = "owner_token_refused"
	CodeClientGrantRequired = "client_grant_required"
	CodeUnavailable         = "token_check_unavailable"
)

// OwnerMessage says why an owner token is refused and what to do instead.
const OwnerMessage = "this server reads only through grant-scoped client tokens and refuses owner tokens; run `pdpp connect <provider-url>` to obtain a client grant"

// GrantMessage says what grant this server needs, for an Unusable token.
const GrantMessage = "this server reads through a single-source client grant (a token bound to one grant_id, from an authorization that names one connector with connector_id or PDPP authorization_details); " +
	"a multi-source package token works only at the provider's own hosted /mcp. Authorize again for one source, or run `pdpp connect <provider-url>`"

// Defaults of Options.
const (
	// DefaultTTL is how long a client or owner verdict is trusted. A token
	// revoked meanwhile is caught by the RS's token-level refusal of the
	// next data call, which evicts the entry.
	DefaultTTL = 10 * time.Minute
	// DefaultMaxEntries bounds the cache (32-byte key plus the declared
	// roles of one grant per entry).
	DefaultMaxEntries = 4096
	// DefaultMaxInFlight bounds the distinct tokens being checked at once;
	// beyond it a new token's check is unavailable (retry).
	DefaultMaxInFlight = 256
	// RejectedTTL is how long a token the RS rejected with a listed
	// token-level code (rs.TokenCode) stays refused without asking the RS
	// again, so a client that keeps retrying an expired or revoked token
	// costs the RS one read per RejectedTTL, not one per request. Short,
	// for a token is rarely rejected by mistake.
	RejectedTTL = 30 * time.Second
	// SuspectRejectedTTL replaces RejectedTTL for a rejection read within
	// TroubleWindow of RS trouble (an error, a timeout): a spurious
	// rejection while the RS recovers keeps a good token out for at most
	// this long.
	SuspectRejectedTTL = 5 * time.Second
	// TroubleWindow is how long after RS trouble a rejection is suspect.
	TroubleWindow = 30 * time.Second
	// FirstRejectedTTL replaces RejectedTTL for a token's first rejection
	// whose code does not say the grant ended (grant_*): one introspection
	// answer (context.active_false, a bare 401) justifies a short refusal,
	// the RS repeating it on the next read a long one. So one spurious 401
	// keeps a good token out for at most this long, and a dead token costs
	// the RS one read more.
	FirstRejectedTTL = 2 * time.Second
	// StrikeMemory is how long a token's rejection is remembered as its
	// first strike, so the next rejection within it is kept RejectedTTL.
	StrikeMemory = 5 * time.Minute
	// MaxRejectedEntries bounds the rejected verdicts kept, and apart the
	// strikes remembered. They live apart from client and owner verdicts,
	// so a flood of made-up tokens can evict only other rejected ones.
	MaxRejectedEntries = 1024
	// DefaultChecksPerSecond and DefaultCheckBurst are the token bucket of
	// one client (an IPv4 address or IPv6 /64) for checks that need an RS
	// read: a token whose verdict is cached, or whose read is already in
	// flight, costs nothing. Made-up bearers from one client cost the RS at
	// most this rate; beyond it the check is unavailable (retry).
	DefaultChecksPerSecond = 5
	DefaultCheckBurst      = 20
	// DefaultMaxClients bounds the clients whose buckets are kept.
	DefaultMaxClients = 4096
	// DefaultTimeout bounds one check's RS reads (Options.Timeout): a
	// check is a small schema read, and an RS that takes longer to judge a
	// token keeps the new token's request waiting no longer than this.
	DefaultTimeout = 10 * time.Second
	// MaxCheckConns is the RS connection budget of token checks, apart
	// from the data calls' (rs.MaxConnsPerRSHost): give the checker an RS
	// client of its own with rs.Options{MaxConns: MaxCheckConns}, and a
	// flood of made-up bearers waits for these connections, never for the
	// ones verified tokens read their data through.
	MaxCheckConns = 16
)

// Options tune a Checker; zero values take the defaults.
type Options struct {
	// Timeout bounds one check's RS reads (compact view plus the plain
	// fallback). Default DefaultTimeout.
	Timeout time.Duration
	// MaxClients bounds the clients whose check rates are kept (see
	// WithClientAddr). Default DefaultMaxClients.
	MaxClients int
}

// Checker establishes and caches verdicts. It is safe for concurrent use.
type Checker struct {
	rs       *rs.Client
	token    rs.TokenSource
	timeout  time.Duration
	cache    *cache // client and owner verdicts, DefaultTTL and DefaultMaxEntries
	rejected *cache // Rejected verdicts, RejectedTTL and MaxRejectedEntries
	strikes  *cache // tokens rejected once, StrikeMemory and MaxRejectedEntries
	flights  *flights
	rates    *clientRates
	// trouble is when (unix nanoseconds) an RS request made for a check or
	// a call last ended in RS trouble (rs.ClassUnavailable); 0 for never.
	trouble atomic.Int64
	now     func() time.Time
}

// New returns a Checker reading through client; token yields the bearer of
// the current call (the same source client sends).
func New(client *rs.Client, token rs.TokenSource, opt Options) *Checker {
	c := &Checker{
		rs: client, token: token, timeout: cmp.Or(max(opt.Timeout, 0), DefaultTimeout),
		flights: &flights{max: DefaultMaxInFlight, m: map[[32]byte]*flight{}},
		rates: &clientRates{limit: DefaultChecksPerSecond, burst: DefaultCheckBurst, max: cmp.Or(max(opt.MaxClients, 0), DefaultMaxClients),
			m: map[netip.Prefix]*clientRate{}},
		now: time.Now,
	}
	c.cache = newCache(DefaultMaxEntries, c.clock)
	c.rejected = newCache(MaxRejectedEntries, c.clock)
	c.strikes = newCache(MaxRejectedEntries, c.clock)
	return c
}

// clock reads c.now, which tests may replace before first use.
func (c *Checker) clock() time.Time { return c.now() }

// Key is the cache key of a token: its SHA-256, so no token is kept.
func Key(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// Verified reports, without any RS read, whether token has a cached client
// verdict, and names its tenant (see Result.Tenant). The hosted transport
// asks it before a request takes a slot: a token it knows is served as
// verified work, any other waits for its check among unverified requests.
func (c *Checker) Verified(token string) (tenant string, ok bool) {
	r, ok := c.cache.get(Key(token))
	if !ok || r.Verdict != Client {
		return "", false
	}
	return r.Tenant(), true
}

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
	if leader && !c.rates.allow(ctx, c.now()) {
		r := unavailable("this client is checking new tokens faster than the server allows; retry in a second")
		c.flights.finish(key, f, r)
		return r
	}
	if leader {
		// The read outlives a leader that gives up, so that the callers
		// sharing it still get an answer; it keeps ctx's values (the
		// bearer) and is bounded by c.timeout.
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
			defer cancel()
			r := c.read(rctx)
			c.keep(key, r)
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

// keep caches a verdict for as long as it may be trusted (see RejectedTTL
// and the TTLs after it): client and owner verdicts for the TTL, a
// rejection only when its code is a listed token-level one, Unusable and
// Unavailable verdicts not at all.
func (c *Checker) keep(key [32]byte, r Result) {
	switch r.Verdict {
	case Client, Owner:
		c.cache.put(key, r, DefaultTTL)
		c.strikes.remove(key)
	case Rejected:
		if r.Err == nil || !rs.TokenCode(r.Err.Code()) {
			return
		}
		_, repeated := c.strikes.get(key)
		ttl := RejectedTTL
		if !repeated && !strings.HasPrefix(r.Err.Code(), "grant_") {
			ttl = FirstRejectedTTL
		}
		if c.troubleSince(TroubleWindow) {
			ttl = min(ttl, SuspectRejectedTTL)
		}
		c.strikes.put(key, Result{}, StrikeMemory)
		c.rejected.put(key, r, ttl)
	}
}

// noteTrouble records that an RS request just ended in RS trouble.
func (c *Checker) noteTrouble() { c.trouble.Store(c.now().UnixNano()) }

// troubleSince reports whether RS trouble was seen within the last d.
func (c *Checker) troubleSince(d time.Duration) bool {
	at := c.trouble.Load()
	return at != 0 && c.now().UnixNano()-at < int64(d)
}

// Forget evicts every cached verdict of the bearer of ctx (client, owner or
// rejected), so its next request asks the RS again.
func (c *Checker) Forget(ctx context.Context) {
	if tok, err := c.token(ctx); err == nil {
		k := Key(tok)
		c.cache.remove(k)
		c.rejected.remove(k)
	}
}

// Observe takes note of a failed RS request made with the bearer of ctx
// after its verdict (a tool call or resource read) and returns its class
// (see rs.ClassOf). A token-level refusal evicts every cached verdict of the
// token (and counts as its first strike, see FirstRejectedTTL), and so does
// a 401 whose code no list names (it stays the call's error, but the next
// request asks the RS again); RS trouble is recorded, so a rejection read
// right after it is kept only SuspectRejectedTTL. err values that are not
// *rs.Error are ClassRequest.
func (c *Checker) Observe(ctx context.Context, err error) rs.Class {
	re, ok := errors.AsType[*rs.Error](err)
	if !ok {
		return rs.ClassRequest
	}
	class := rs.ClassOf(re)
	switch {
	case class == rs.ClassToken:
		// The RS refused the token itself: a rejection read next repeats it.
		c.Forget(ctx)
		if tok, err := c.token(ctx); err == nil {
			c.strikes.put(Key(tok), Result{}, StrikeMemory)
		}
	case class == rs.ClassRequest && re.Status == http.StatusUnauthorized:
		c.Forget(ctx)
	case class == rs.ClassUnavailable:
		c.noteTrouble()
	}
	return class
}

// Roles returns the display roles the bearer's grant declares for stream,
// as read by the check; it makes no RS call.
func (c *Checker) Roles(ctx context.Context, stream string) evidence.Roles {
	if tok, err := c.token(ctx); err == nil {
		r, _ := c.cache.get(Key(tok)) // none: no roles
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
		if !errors.As(err, &re) {
			return c.troubled("the RS schema read failed (rs_error)")
		}
		switch rs.CheckClassOf(re) {
		case rs.ClassToken:
			return Result{Verdict: Rejected, Err: re}
		case rs.ClassUnusable:
			return Result{Verdict: Unusable, Err: UnusableError(re.Status, re.Code(), messageOf(re))}
		}
		return c.troubled("the RS schema read failed (" + re.Code() + ")")
	}
	kind, grant, ok := tokenKind(body)
	switch {
	case !ok:
		return c.troubled("the RS schema answer is not a JSON document")
	case kind == "owner":
		return Result{Verdict: Owner, Err: rs.AdapterError(CodeOwnerRefused, OwnerMessage, "")}
	case kind == "client":
		return Result{Verdict: Client, roles: evidence.AllRoles(body), grant: grant}
	case kind != "":
		// The RS names a kind of token this server does not read with
		// (e.g. a multi-source package token).
		return Result{Verdict: Unusable, Err: UnusableError(http.StatusOK, "", fmt.Sprintf("the schema names the bearer a %q token", evidence.Clip(kind, 64)))}
	}
	return c.troubled("the RS schema answer does not state a known token kind for this bearer")
}

// troubled is an Unavailable verdict caused by the RS, which is recorded as
// RS trouble.
func (c *Checker) troubled(why string) Result {
	c.noteTrouble()
	return unavailable(why)
}

// messageOf is the message member of an RS error, clipped.
func messageOf(e *rs.Error) string {
	var m struct{ Message string }
	_ = json.Unmarshal(e.Object(), &m)
	return evidence.Clip(m.Message, maxRSMessage)
}

// maxRSMessage bounds the RS message an Unusable error repeats.
const maxRSMessage = 200

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
	return slices.Contains([]int{http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusNotAcceptable, http.StatusUnprocessableEntity}, status)
}

// tokenKind reads bearer.token_kind (or pdpp_token_kind, or the bearer
// scope) and bearer.grant_id (clipped to maxGrantID bytes; "" when longer or
// absent) from a schema document; ok is false when body is not a JSON
// object.
func tokenKind(body []byte) (kind, grant string, ok bool) {
	var doc struct {
		Bearer *struct {
			TokenKind string `json:"token_kind"`
			Kind      string `json:"pdpp_token_kind"`
			Scope     string `json:"scope"`
			GrantID   string `json:"grant_id"`
		} `json:"bearer"`
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &doc) != nil {
		return "", "", false
	}
	if doc.Bearer == nil {
		return "", "", true
	}
	b := doc.Bearer
	if len(b.GrantID) <= maxGrantID {
		grant = b.GrantID
	}
	switch {
	case b.TokenKind == "owner" || b.Kind == "owner" || b.Scope == "owner":
		return "owner", "", true
	case b.TokenKind != "":
		return b.TokenKind, grant, true
	case b.Kind != "":
		return b.Kind, grant, true
	case b.Scope == "grant":
		return "client", grant, true
	}
	return "", "", true
}

// UnusableError is the typed error of an Unusable token: what the RS
// answered to its schema read (status, code, message) and what grant this
// server needs instead. Not retryable.
func UnusableError(status int, code, message string) *rs.Error {
	answer := fmt.Sprintf("HTTP %d", status)
	obj := map[string]any{"type": "adapter_error", "code": CodeClientGrantRequired, "rs_status": status}
	if code != "" {
		answer += " " + code
		obj["rs_code"] = code
	}
	if message != "" {
		answer += ": " + message
	}
	obj["message"] = "the resource server's answer to this token's schema read (" + answer + ") says it can never read through this server; " + GrantMessage
	b, _ := json.Marshal(map[string]any{"error": obj})
	return &rs.Error{Envelope: b}
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

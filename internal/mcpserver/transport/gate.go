package transport

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
)

const (
	// busyRetryAfter is the Retry-After of a 503 over the concurrent
	// request cap: a slot frees as soon as one call ends.
	busyRetryAfter = "1"
	// busyLogEvery spaces warnings about refused requests, so a burst of
	// refusals cannot flood the log.
	busyLogEvery = time.Second
	// busyNotReadyAfter is how long every slot must have been taken without
	// a break before /readyz answers 503 ("busy"): long enough to ride out a
	// burst, short enough that a replica held full (by slow calls, or peers
	// holding them) stops getting new traffic within a probe or two.
	busyNotReadyAfter = 3 * time.Second
)

// slotGate holds the MaxConcurrentRequests slots, shared fairly between
// tenants, and since when all have been taken (for /readyz).
type slotGate struct {
	mu        sync.Mutex
	max       int
	contended int // a tenant's cap while others are served (see take)
	inUse     int
	byTenant  map[string]int // slots held per tenant; at most max entries
	shared    time.Time      // the last moment two tenants or more held slots
	fullSince time.Time      // when the last free slot was taken; zero while one is free
}

// sharedFor is how long a tenant stays capped after another last held a
// slot: a client that sends one call after another is mostly between calls.
const sharedFor = 2 * time.Second

func newSlotGate(slots, contended int) *slotGate {
	return &slotGate{max: slots, contended: contended, byTenant: map[string]int{}}
}

// take reserves a slot for tenant, or returns why it cannot: server_busy
// when all are taken, tenant_share_busy when the tenant holds its share.
// Alone, a tenant may take every slot. While others hold slots (or did
// within sharedFor), its share is max/k for the k tenants holding slots
// and, for a token, at most contended (MaxConcurrentPerTenant).
func (g *slotGate) take(tenant string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inUse >= g.max {
		return reasonServerBusy
	}
	held := g.byTenant[tenant]
	active := len(g.byTenant)
	if held == 0 {
		active++
	}
	now := time.Now()
	if active > 1 {
		g.shared = now
	}
	// The contended cap binds tokens only: an address may stand for many
	// people (a proxy, a NAT), so addresses share by max/k alone.
	capped := strings.HasPrefix(tenant, tokenTenant)
	if held > 0 && (held >= max(1, g.max/active) || capped && held >= g.contended && now.Sub(g.shared) < sharedFor) {
		return reasonShareBusy
	}
	g.inUse++
	g.byTenant[tenant] = held + 1
	if g.inUse == g.max {
		g.fullSince = time.Now()
	}
	return ""
}

func (g *slotGate) release(tenant string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inUse--
	dec(g.byTenant, tenant)
	g.fullSince = time.Time{}
}

// full reports since when every slot has been taken without a break: false
// while one is free.
func (g *slotGate) full() (since time.Time, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fullSince, g.inUse >= g.max
}

// Refusal reasons of the slot gate.
const (
	reasonServerBusy = "server_busy"
	reasonShareBusy  = "tenant_share_busy"
)

// Tenants of the slots and of the bytes-in-flight budget (package
// inflight): tokenTenant and what the check names (HTTPConfig.Verified,
// AuthVerdict.Tenant; by default a hash of the token) once the bearer's
// verdict is good. An unchecked bearer is never a tenant of its own, or
// each made-up bearer would be a fresh one and fair shares never apply.
// Work without a checked bearer (none, or no Authenticate) is its client
// address's tenant: addressTenant and the client key.
const (
	tokenTenant   = "t:"
	addressTenant = "a:"
	// unverifiedTenant is the one tenant of the bytes-in-flight budget
	// every unverified request's token check reads under.
	unverifiedTenant = "u:unverified"
)

// hashTenant is the identity of a verified bearer that the check named no
// identity for: the first 16 bytes of the SHA-256 of the token (never the
// token itself).
func hashTenant(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:16])
}

// checkWait bounds one token check once it has its turn; a longer one is
// answered 503 token_check_unavailable (retry).
const checkWait = 10 * time.Second

// admitMiddleware decides who a request is before it may take a slot, and
// puts its bearer and tenant (inflight.WithTenant) into its context:
//
//   - With RequireBearer, a missing or malformed Authorization header is
//     answered 401 with a challenge, at no cost.
//   - A bearer HTTPConfig.Verified knows takes a slot as its verified
//     tenant at once; no stranger's work stands in its way.
//   - Any other waits for its check (tokenChecks.check), holding nothing;
//     accepted, it takes a slot as its verified tenant and its client
//     address is remembered as a person's. While every slot is taken it is
//     refused before its check, costing no upstream call.
//   - Without Authenticate or a bearer, the tenant is the client address.
//
// A request over the slots waits for nothing: 503 with Retry-After, counted
// as shed, and a rate-limited warning that carries no request data.
func (st *settings) admitMiddleware(g *slotGate, checks *tokenChecks, next http.Handler) http.Handler {
	msg := fmt.Sprintf("the server is serving its limit of %d concurrent requests: retry after a second", st.MaxConcurrentRequests)
	shareMsg := fmt.Sprintf("the server is serving its share of %d concurrent requests for your token (or address) while others wait: retry after a second", st.MaxConcurrentRequests)
	warn := &busyWarning{log: st.logger, message: "refusing /mcp requests: concurrent request cap reached",
		attrs: []any{"max_concurrent_requests", st.MaxConcurrentRequests}}
	unverifiedWarn := &busyWarning{log: st.logger, message: "refusing /mcp requests: their network's queue of token checks is full",
		attrs: []any{"max_unverified_requests", st.MaxUnverifiedRequests}}
	busy := func(w http.ResponseWriter, r *http.Request, reason string) {
		w.Header().Set("Retry-After", busyRetryAfter)
		m := msg
		if reason == reasonShareBusy {
			m = shareMsg
		}
		writeRPCError(w, http.StatusServiceUnavailable, requestID(r), codeServerLimit, m,
			limitData{Reason: reason, MaxConcurrentRequests: st.MaxConcurrentRequests})
		st.Metrics.Shed(reason)
		warn.refused()
	}
	serve := func(w http.ResponseWriter, r *http.Request, tenant string) {
		if reason := g.take(tenant); reason != "" {
			busy(w, r, reason)
			return
		}
		defer g.release(tenant)
		next.ServeHTTP(w, r.WithContext(inflight.WithTenant(r.Context(), tenant)))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, err := parseBearer(r.Header)
		if err != nil {
			if st.RequireBearer {
				st.challenge(w, r, err)
				return
			}
			serve(w, r, addressTenant+clientKeyOf(r).String())
			return
		}
		ctx := WithBearer(r.Context(), token)
		if st.Authenticate == nil {
			serve(w, r.WithContext(ctx), addressTenant+clientKeyOf(r).String())
			return
		}
		tenant, known := "", false
		if st.Verified != nil {
			tenant, known = st.Verified(token)
		}
		if !known {
			if _, full := g.full(); full {
				busy(w, r, reasonServerBusy)
				return
			}
			v, reason := checks.check(ctx, clientKeyOf(r), token)
			if reason != "" {
				st.refuseUnverified(w, r, reason)
				unverifiedWarn.refused()
				return
			}
			if v.Outcome != AuthAccept {
				st.refuse(w, r, v)
				return
			}
			tenant = v.Tenant
		}
		checks.people.mark(clientKeyOf(r))
		if tenant == "" {
			tenant = hashTenant(token)
		}
		ctx = context.WithValue(ctx, rejectKey{}, new(atomic.Bool))
		serve(w, r.WithContext(ctx), tokenTenant+tenant)
	})
}

// refuseUnverified answers a request whose check the line refused (503).
func (st *settings) refuseUnverified(w http.ResponseWriter, r *http.Request, reason string) {
	_, x := withExchange(r)
	x.shed = true
	msg := "the server's queue of token checks for your network (IPv4 /24, IPv6 /48) or address is full: retry after a second; a token checked once is served without waiting here"
	if reason == reasonUnverifiedWait {
		msg = fmt.Sprintf("the token check did not get its turn within %v: retry after a second; a token checked once is served without waiting here", lineWait)
	}
	w.Header().Set("Retry-After", busyRetryAfter)
	writeRPCError(w, http.StatusServiceUnavailable, requestID(r), codeServerLimit, msg,
		limitData{Reason: reason, MaxUnverifiedRequests: st.MaxUnverifiedRequests})
	st.Metrics.Shed(reason)
}

// busyWarning writes at most one warning per busyLogEvery, with the number
// refused since the previous one.
type busyWarning struct {
	log     *slog.Logger
	message string
	attrs   []any        // fixed attributes (the limit met)
	last    atomic.Int64 // unix nanoseconds of the last warning
	pending atomic.Int64 // refusals not reported yet
}

func (b *busyWarning) refused() {
	b.pending.Add(1)
	now := time.Now().UnixNano()
	last := b.last.Load()
	if now-last < int64(busyLogEvery) || !b.last.CompareAndSwap(last, now) {
		return
	}
	b.log.Warn(b.message, append(slices.Clone(b.attrs), "refused", b.pending.Swap(0))...)
}

type bearerKey struct{}

// WithBearer returns a context carrying the client's bearer token. The HTTP
// stack sets it for exactly one request; a stdio runner may set it once on
// the context handed to ServeStdio.
func WithBearer(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, bearerKey{}, token)
}

// BearerFromContext returns the bearer token of the request being served.
// Tool handlers use it to call the resource server with the same token; it
// must never be logged or kept beyond the call.
func BearerFromContext(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(bearerKey{}).(string)
	return t, ok && t != ""
}

// maxTokenBytes bounds an accepted token; longer values are malformed.
const maxTokenBytes = 8 << 10

var (
	errNoBearer        = errors.New("missing bearer token")
	errMalformedBearer = errors.New("malformed Authorization header: expected a single \"Bearer <token>\"")
)

// parseBearer extracts the token of the Authorization header per RFC 6750
// section 2.1 (case-insensitive scheme, b64token syntax).
func parseBearer(h http.Header) (string, error) {
	values := h.Values("Authorization")
	if len(values) > 1 {
		return "", errMalformedBearer
	}
	if len(values) == 0 || strings.TrimSpace(values[0]) == "" {
		return "", errNoBearer
	}
	scheme, rest, ok := strings.Cut(values[0], " ")
	if token := strings.TrimLeft(rest, " "); ok && strings.EqualFold(scheme, "Bearer") && isB64Token(token) {
		return token, nil
	}
	return "", errMalformedBearer
}

// isB64Token checks b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" /
// "+" / "/" ) *"=".
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" || len(s) > maxTokenBytes {
		return false
	}
	for i := range len(body) {
		c := body[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// challenge answers a missing or malformed Authorization header (err, from
// parseBearer) under RequireBearer: 401 with a challenge naming the
// protected-resource metadata, also named in the JSON-RPC error body.
func (st *settings) challenge(w http.ResponseWriter, r *http.Request, err error) {
	metadata := st.metadataURL(r)
	challenge := `Bearer resource_metadata="` + quoteParam(metadata) + `"`
	reason := "missing_token"
	if errors.Is(err, errMalformedBearer) {
		challenge += `, error="invalid_request", error_description="malformed Authorization header"`
		reason = "malformed_token"
	}
	writeUnauthorized(w, requestID(r), challenge,
		"authorization required: send Authorization: Bearer <client token>",
		map[string]string{"reason": reason, "resource_metadata": metadata})
}

// AuthOutcome is how the hosted transport answers a bearer.
type AuthOutcome int

const (
	// AuthAccept serves the request.
	AuthAccept AuthOutcome = iota
	// AuthInvalidToken answers 401 with an invalid_token challenge: the
	// token is not (or no longer) accepted; the client must refresh or
	// re-authorize.
	AuthInvalidToken
	// AuthForbidden answers 403 with Message: this server refuses the
	// token for good (an owner token, or one the RS will never let read
	// here, such as a multi-source package token).
	AuthForbidden
	// AuthUnavailable answers 503 with Retry-After: the token could not be
	// checked now.
	AuthUnavailable
)

// AuthVerdict is what HTTPConfig.Authenticate decides for one bearer.
type AuthVerdict struct {
	Outcome AuthOutcome
	// Reason is a short code put in the error's data (e.g.
	// owner_token_refused); Message is the error message shown to the
	// client. Both are for AuthForbidden and AuthUnavailable.
	Reason, Message string
	// Data are further members of the error's data beside reason (e.g.
	// the RS status and code behind a refusal); optional, small.
	Data map[string]any
	// Tenant names the verified identity of an accepted bearer, as
	// HTTPConfig.Verified does (e.g. its grant id); empty: a hash of the
	// token.
	Tenant string
}

// data is the error data of a refusal: Data with reason set to Reason.
func (v AuthVerdict) data() map[string]any {
	out := make(map[string]any, len(v.Data)+1)
	maps.Copy(out, v.Data)
	out["reason"] = v.Reason
	return out
}

// authRetryAfter is the Retry-After of a 503 for an unavailable token check.
const authRetryAfter = "5"

const codeUnavailable = -32000 // JSON-RPC code of a 503 for an unavailable check

func (st *settings) refuse(w http.ResponseWriter, r *http.Request, v AuthVerdict) {
	switch v.Outcome {
	case AuthInvalidToken:
		st.refuseInvalidToken(w, r)
	case AuthForbidden:
		// A 403 carries no challenge for the access log's observer to read
		// a reason from, so it is counted here.
		st.Metrics.AuthRefused(cmp.Or(v.Reason, "forbidden"))
		writeRPCError(w, http.StatusForbidden, requestID(r), codeUnauthorized, v.Message, v.data())
	default:
		st.Metrics.AuthRefused(cmp.Or(v.Reason, "token_check_unavailable"))
		w.Header().Set("Retry-After", authRetryAfter)
		writeRPCError(w, http.StatusServiceUnavailable, requestID(r), codeUnavailable, v.Message, v.data())
	}
}

// refuseInvalidToken answers 401 with an RFC 6750 invalid_token challenge
// that names the protected-resource metadata.
func (st *settings) refuseInvalidToken(w http.ResponseWriter, r *http.Request) {
	metadata := st.metadataURL(r)
	writeUnauthorized(w, requestID(r),
		`Bearer error="invalid_token", error_description="the token is not accepted by the resource server", resource_metadata="`+quoteParam(metadata)+`"`,
		"the bearer token was not accepted (expired, revoked or unknown): refresh it or authorize again",
		map[string]string{"reason": "invalid_token", "resource_metadata": metadata})
}

// Unauthorized answers 401 the way the bearer middleware does, for a server
// that checks a bearer of its own in front of the /mcp handler: challenge
// as the WWW-Authenticate header and a JSON-RPC error body with id null,
// code -32001, message and data {"reason": reason}.
func Unauthorized(w http.ResponseWriter, challenge, message, reason string) {
	writeUnauthorized(w, nil, challenge, message, map[string]string{"reason": reason})
}

func writeUnauthorized(w http.ResponseWriter, id json.RawMessage, challenge, message string, data any) {
	w.Header().Set("WWW-Authenticate", challenge)
	writeRPCError(w, http.StatusUnauthorized, id, codeUnauthorized, message, data)
}

// rejectKey holds an *atomic.Bool set when the RS refuses the bearer itself
// during a request whose bearer had been accepted; the dispatcher then
// answers 401 instead of its reply (a batch that already answered an item
// keeps its answers: see serveBatch).
type rejectKey struct{}

// MarkTokenRejected records that the RS refused the bearer of the hosted
// request of ctx as a token (inactive, expired or revoked; never a scope
// refusal): the reply becomes HTTP 401 with an invalid_token challenge.
// Outside a hosted request with an Authenticate hook it does nothing.
func MarkTokenRejected(ctx context.Context) {
	if s, ok := ctx.Value(rejectKey{}).(*atomic.Bool); ok {
		s.Store(true)
	}
}

// tokenRejected reports whether MarkTokenRejected was called for r.
func tokenRejected(r *http.Request) bool {
	s, ok := r.Context().Value(rejectKey{}).(*atomic.Bool)
	return ok && s.Load()
}

const codeUnauthorized = -32001 // server-defined JSON-RPC code of 401 bodies

// quoteParam escapes a value for an HTTP quoted-string.
func quoteParam(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

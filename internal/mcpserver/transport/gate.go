package transport

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
)

// busyRetryAfter is the Retry-After of a 503 for a request over the
// concurrent request cap: a slot frees as soon as one call ends.
const busyRetryAfter = "1"

// busyLogEvery is the least time between two warnings about refused
// requests, so a burst of refusals cannot flood the log.
const busyLogEvery = time.Second

// busyNotReadyAfter is how long every slot must have been taken, without a
// moment's break, before /readyz answers 503 ("busy"): long enough that a
// burst a load balancer should ride out does not take the replica out, short
// enough that a replica held full (by slow calls, or peers holding them)
// stops getting new traffic within a probe or two.
const busyNotReadyAfter = 3 * time.Second

// busyData is the data member of the JSON-RPC error of a refused request.
type busyData struct {
	Reason                string `json:"reason"`
	MaxConcurrentRequests int    `json:"max_concurrent_requests"`
}

// slotGate holds the MaxConcurrentRequests slots, shared fairly between
// tenants (see tenantKey), and remembers since when all of them have been
// taken, for /readyz.
type slotGate struct {
	mu        sync.Mutex
	max       int
	contended int // a tenant's cap while others are served (see take)
	inUse     int
	byTenant  map[string]int // slots held per tenant; at most max entries
	shared    time.Time      // the last moment two tenants or more held slots
	fullSince time.Time      // when the last free slot was taken; zero while one is free
}

// sharedFor is how long a tenant stays capped after the last moment
// another tenant held a slot: a client that sends one call after another
// is between calls most of the time.
const sharedFor = 2 * time.Second

// newSlotGate returns a gate of slots, of which one tenant may hold at
// most contended while others are served.
func newSlotGate(slots, contended int) *slotGate {
	return &slotGate{max: slots, contended: contended, byTenant: map[string]int{}}
}

// take reserves a slot for tenant, or returns why it cannot: server_busy
// when all are taken, tenant_share_busy when the tenant holds its share.
// Under no contention one tenant may take every slot. While other tenants
// hold slots (or did within sharedFor), a tenant's share is max/k for the
// k tenants holding slots and, for a token, at most the contended cap
// (MaxConcurrentPerTenant): it takes no more until it is back within it, so the slots and CPU
// time it gives back go to the others.
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
	if n := g.byTenant[tenant] - 1; n > 0 {
		g.byTenant[tenant] = n
	} else {
		delete(g.byTenant, tenant)
	}
	g.fullSince = time.Time{}
}

// fullFor is how long every slot has been taken without a break (0 when one
// is free).
func (g *slotGate) fullFor() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fullSince.IsZero() {
		return 0
	}
	return time.Since(g.fullSince)
}

// Refusal reasons of the slot gate.
const (
	reasonServerBusy = "server_busy"
	reasonShareBusy  = "tenant_share_busy"
)

// tenantKey is the fair-share key of a request, for the slots and the
// bytes-in-flight budget (package inflight): "t:" and the SHA-256 of its
// bearer token (never the token itself) when it carries one, otherwise
// "a:" and its client address (see clientKey).
func tenantKey(r *http.Request) string {
	if tok, err := parseBearer(r.Header); err == nil && tok != "" {
		sum := sha256.Sum256([]byte(tok))
		return tokenTenant + hex.EncodeToString(sum[:16])
	}
	return "a:" + clientKey(r.RemoteAddr).String()
}

// tokenTenant starts the key of a tenant known by its bearer token.
const tokenTenant = "t:"

// concurrencyMiddleware lets at most MaxConcurrentRequests requests past it
// at once, at most a fair share of them per tenant while several compete
// (see slotGate.take). A request over the cap waits for nothing: it gets
// 503 with Retry-After and a JSON-RPC error, is counted in Metrics as
// shed, and is reported in a rate-limited warning that carries no request
// data. It sits after the body has been read (see bodyReadMiddleware), so
// only requests whose whole body has arrived hold a slot, and before the
// bearer is checked, so a refused request costs no RS call. It names the
// request's tenant in its context (inflight.WithTenant) for the budget.
func (st *settings) concurrencyMiddleware(g *slotGate, next http.Handler) http.Handler {
	msg := fmt.Sprintf("the server is serving its limit of %d concurrent requests: retry after a second", st.MaxConcurrentRequests)
	shareMsg := fmt.Sprintf("the server is serving its share of %d concurrent requests for your token (or address) while others wait: retry after a second", st.MaxConcurrentRequests)
	warn := &busyWarning{log: st.logger, message: "refusing /mcp requests: concurrent request cap reached",
		attrs: []any{"max_concurrent_requests", st.MaxConcurrentRequests}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant := tenantKey(r)
		if reason := g.take(tenant); reason != "" {
			w.Header().Set("Retry-After", busyRetryAfter)
			m := msg
			if reason == reasonShareBusy {
				m = shareMsg
			}
			writeRPCError(w, http.StatusServiceUnavailable, requestID(r), codeServerLimit, m,
				busyData{Reason: reason, MaxConcurrentRequests: st.MaxConcurrentRequests})
			st.Metrics.Shed(reason)
			warn.refused()
			return
		}
		defer g.release(tenant)
		next.ServeHTTP(w, r.WithContext(inflight.WithTenant(r.Context(), tenant)))
	})
}

// busyWarning writes at most one warning per busyLogEvery about refused
// requests, with the number refused since the previous one.
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
	attrs := append(append([]any(nil), b.attrs...), "refused", b.pending.Swap(0))
	b.log.Warn(b.message, attrs...)
}

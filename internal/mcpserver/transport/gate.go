package transport

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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

// slotGate holds the MaxConcurrentRequests slots and remembers since when
// all of them have been taken, for /readyz.
type slotGate struct {
	mu        sync.Mutex
	max       int
	inUse     int
	fullSince time.Time // when the last free slot was taken; zero while one is free
}

// take reserves a slot, or reports false when all are taken.
func (g *slotGate) take() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inUse >= g.max {
		return false
	}
	g.inUse++
	if g.inUse == g.max {
		g.fullSince = time.Now()
	}
	return true
}

func (g *slotGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inUse--
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

// concurrencyMiddleware lets at most MaxConcurrentRequests requests past it
// at once. A request over the cap waits for nothing: it gets 503 with
// Retry-After and a JSON-RPC error, is counted in Metrics as shed, and is
// reported in a rate-limited warning that carries no request data. It sits
// after the body has been read (see bodyReadMiddleware), so only requests
// whose whole body has arrived hold a slot, and before the bearer is
// checked, so a refused request costs no RS call.
func (st *settings) concurrencyMiddleware(g *slotGate, next http.Handler) http.Handler {
	msg := fmt.Sprintf("the server is serving its limit of %d concurrent requests: retry after a second", st.MaxConcurrentRequests)
	data := busyData{Reason: "server_busy", MaxConcurrentRequests: st.MaxConcurrentRequests}
	warn := &busyWarning{log: st.logger, message: "refusing /mcp requests: concurrent request cap reached",
		attrs: []any{"max_concurrent_requests", st.MaxConcurrentRequests}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.take() {
			w.Header().Set("Retry-After", busyRetryAfter)
			writeRPCError(w, http.StatusServiceUnavailable, requestID(r), codeServerLimit, msg, data)
			st.Metrics.Shed("server_busy")
			warn.refused()
			return
		}
		defer g.release()
		next.ServeHTTP(w, r)
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

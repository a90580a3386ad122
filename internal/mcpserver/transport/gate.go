package transport

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"
)

// busyRetryAfter is the Retry-After of a 503 for a request over the
// concurrent request cap: a slot frees as soon as one call ends.
const busyRetryAfter = "1"

// busyLogEvery is the least time between two warnings about refused
// requests, so a burst of refusals cannot flood the log.
const busyLogEvery = time.Second

// busyData is the data member of the JSON-RPC error of a refused request.
type busyData struct {
	Reason                string `json:"reason"`
	MaxConcurrentRequests int    `json:"max_concurrent_requests"`
}

// concurrencyMiddleware lets at most MaxConcurrentRequests requests past it
// at once. A request over the cap waits for nothing: it gets 503 with
// Retry-After and a JSON-RPC error (id null, since its body is not read),
// is counted in Metrics as shed, and is reported in a rate-limited warning
// that carries no request data. It sits before the body is read and the
// bearer checked, so a refused request costs neither memory nor an RS call.
func (st *settings) concurrencyMiddleware(next http.Handler) http.Handler {
	slots := make(chan struct{}, st.MaxConcurrentRequests) // one token per request being served
	body := marshalRPCError(nil, codeServerLimit,
		fmt.Sprintf("the server is serving its limit of %d concurrent requests: retry after a second", st.MaxConcurrentRequests),
		busyData{Reason: "server_busy", MaxConcurrentRequests: st.MaxConcurrentRequests})
	warn := &busyWarning{log: st.logger, limit: st.MaxConcurrentRequests}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			next.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", busyRetryAfter)
			writeJSON(w, http.StatusServiceUnavailable, body)
			st.Metrics.Shed("server_busy")
			warn.refused()
		}
	})
}

// busyWarning writes at most one warning per busyLogEvery about requests
// refused over the cap, with the number refused since the previous one.
type busyWarning struct {
	log     *slog.Logger
	limit   int
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
	b.log.Warn("refusing /mcp requests: concurrent request cap reached",
		"max_concurrent_requests", b.limit, "refused", b.pending.Swap(0))
}

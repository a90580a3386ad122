package tokencheck

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

type clientKey struct{}

// WithClientAddr returns ctx naming the network address a request came
// from (an http.Request's RemoteAddr, "host:port"), so checks that need an
// RS read are limited per client (see DefaultChecksPerSecond). Without it
// (stdio) checks are not limited per client.
func WithClientAddr(ctx context.Context, remoteAddr string) context.Context {
	p, ok := clientPrefix(remoteAddr)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, p)
}

// clientPrefix is the unit a client is limited by: its IPv4 address, or
// the /64 of its IPv6 address (one host usually holds a whole /64).
func clientPrefix(remoteAddr string) (netip.Prefix, bool) {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Prefix{}, false
	}
	addr := ap.Addr().Unmap().WithZone("")
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, err := addr.Prefix(bits)
	return p, err == nil
}

// clientRates holds a token bucket (golang.org/x/time/rate) per client
// prefix for the checks that need an RS read. Size: at most max prefixes;
// when full, buckets idle long enough to be full again go first (forgetting
// them changes nothing), then the least recently used one (one O(max) scan
// per new prefix into a full table).
type clientRates struct {
	mu    sync.Mutex
	limit rate.Limit
	burst int
	max   int
	m     map[netip.Prefix]*clientRate
}

type clientRate struct {
	lim  *rate.Limiter
	last time.Time
}

// allow takes one check from the bucket of ctx's client, if ctx names one.
func (c *clientRates) allow(ctx context.Context, now time.Time) bool {
	p, ok := ctx.Value(clientKey{}).(netip.Prefix)
	if !ok {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[p]
	if e == nil {
		if len(c.m) >= c.max {
			// A bucket idle long enough to be full again is as good as new.
			refill := time.Duration(float64(c.burst) / float64(c.limit) * float64(time.Second))
			makeRoom(c.m, c.max, func(e *clientRate) time.Time { return e.last }, func(t time.Time) bool { return now.Sub(t) >= refill })
		}
		e = &clientRate{lim: rate.NewLimiter(c.limit, c.burst)}
		c.m[p] = e
	}
	e.last = now
	return e.lim.AllowN(now, 1)
}

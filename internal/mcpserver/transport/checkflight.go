package transport

import (
	"context"
	"crypto/sha256"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
)

// One check per distinct bearer: requests with the same unverified bearer
// that arrive while its check waits or runs join it (a flight) instead of
// each taking a place in line, so a client's first burst of parallel calls
// with a new token costs one check. Every request waits for the flight
// under its own context and holds nothing while it waits (no place, no
// slot: it takes a slot as a verified tenant only once the verdict is
// good). The flight runs on a goroutine of its own, detached from the
// request that started it, so it outlives any one request that gives up;
// when every request waiting for it has gone, it is cancelled, leaving the
// line (or ending its check). golang.org/x/sync/singleflight shares one
// call the same way but cannot cancel it when its last caller leaves, so
// the few lines that count the waiters are kept here.

// maxJoiners bounds the requests waiting for one flight: an honest client's
// burst is at most its connections, and the request slots a verdict lets in
// are fewer than this at the default of a tenant's share.
const maxJoiners = 256

// checkFlight is one bearer's check, shared by the requests waiting for it.
type checkFlight struct {
	key     [32]byte
	done    chan struct{} // closed when verdict or reason is set
	verdict AuthVerdict
	reason  string // the line's refusal, when no check ran
	waiters int    // requests waiting now; guarded by tokenChecks.mu
	cancel  context.CancelFunc
}

// tokenChecks are what the checks of unverified bearers share: the line,
// the places known as people's, the requests waiting now
// (mcp_http_unverified_requests) and the flights, by the SHA-256 of the
// bearer (never the bearer itself). Each flight holds a ticket in line or a
// running check, so there are at most maxWaiting+max of them (plus those
// being answered).
type tokenChecks struct {
	st      *settings
	line    *checkLine
	people  *knownPlaces
	waiting atomic.Int64
	mu      sync.Mutex
	flights map[[32]byte]*checkFlight
}

// newTokenChecks sizes the line from the settings: MaxUnverifiedRequests
// checks at once, a quarter of them (at least one) reserved for people;
// queues of half as many (at least 2), at most half a queue (at least one)
// from one address of a network; as many in line in all as the request
// slots (MaxConcurrentRequests, and at least one queue's worth).
func newTokenChecks(st *settings) *tokenChecks {
	places := st.MaxUnverifiedRequests
	perQueue := max(2, places/2)
	return &tokenChecks{
		st:      st,
		line:    newCheckLine(places, max(1, places/4), perQueue, max(1, perQueue/2), max(perQueue, st.MaxConcurrentRequests), st.Metrics),
		people:  newKnownPlaces(),
		flights: map[[32]byte]*checkFlight{},
	}
}

// held is the requests waiting for a check now.
func (c *tokenChecks) held() int { return int(c.waiting.Load()) }

// check gets the verdict for a bearer with no good verdict yet, counting the
// request while it waits: it joins the flight of the same bearer, or starts
// one (a ticket in line, see checkLine). It returns the verdict, or the
// reason the line refused the check; a request whose own context ends first
// gets AuthUnavailable.
func (c *tokenChecks) check(ctx context.Context, client netip.Prefix, token string) (AuthVerdict, string) {
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	key := sha256.Sum256([]byte(token))
	c.mu.Lock()
	f := c.flights[key]
	switch {
	case f != nil && f.waiters >= maxJoiners:
		c.mu.Unlock()
		return AuthVerdict{}, reasonClientUnverifiedBusy
	case f != nil:
		f.waiters++
		c.mu.Unlock()
		c.st.Metrics.TokenCheckJoined()
	default:
		// The flight keeps the values of the request that started it (the
		// bearer, the client address) but not its cancellation.
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &checkFlight{key: key, done: make(chan struct{}), waiters: 1, cancel: cancel}
		c.flights[key] = f
		c.mu.Unlock()
		t, reason := c.line.join(client, c.people.known(client))
		if reason != "" {
			cancel()
			c.finish(f, AuthVerdict{}, reason)
			return AuthVerdict{}, reason
		}
		go c.fly(fctx, f, t, token)
	}
	select {
	case <-f.done:
		return f.verdict, f.reason
	case <-ctx.Done():
		c.leave(f)
		return AuthVerdict{Outcome: AuthUnavailable, Reason: "token_check_unavailable",
			Message: "the request ended before its token was checked"}, ""
	}
}

// fly waits for the flight's turn in line (at most lineWait), runs the
// check under checkWait, gives the place back and answers every request
// waiting for it.
func (c *tokenChecks) fly(ctx context.Context, f *checkFlight, t *ticket, token string) {
	defer f.cancel()
	wctx, cancel := context.WithTimeout(ctx, lineWait)
	reason := c.line.wait(wctx, t)
	cancel()
	if reason != "" {
		c.finish(f, AuthVerdict{}, reason)
		return
	}
	// Every unverified check's reads share one tenant of the bytes-in-flight
	// budget: strangers hold at most its share.
	cctx, cancel := context.WithTimeout(inflight.WithTenant(ctx, unverifiedTenant), checkWait)
	v := c.st.Authenticate(cctx, token)
	cancel()
	c.line.done(t)
	c.finish(f, v, "")
}

// finish answers the flight's requests and forgets it, so the next request
// with the same bearer asks again (or finds its verdict cached).
func (c *tokenChecks) finish(f *checkFlight, v AuthVerdict, reason string) {
	c.mu.Lock()
	c.forget(f)
	c.mu.Unlock()
	f.verdict, f.reason = v, reason
	close(f.done)
}

// leave counts one request less waiting for f; when none is left, f is
// cancelled and forgotten (a request with the same bearer that comes next
// starts a flight of its own).
func (c *tokenChecks) leave(f *checkFlight) {
	c.mu.Lock()
	f.waiters--
	last := f.waiters == 0
	if last {
		c.forget(f)
	}
	c.mu.Unlock()
	if last {
		f.cancel()
	}
}

// forget removes f from the flights, unless another flight took its key;
// the caller holds c.mu.
func (c *tokenChecks) forget(f *checkFlight) {
	if c.flights[f.key] == f {
		delete(c.flights, f.key)
	}
}

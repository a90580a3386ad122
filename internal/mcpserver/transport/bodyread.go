package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The body of a /mcp POST is read, whole and size-checked, before the
// request may take one of the MaxConcurrentRequests slots: a peer that sends
// its headers and then trickles (or withholds) its body waits outside the
// slots, in a phase of its own with its own bounds.
//
//   - A body of at most promptBodyBytes (by its Content-Length) that arrives
//     within promptWindow needs nothing more: that is every usual JSON-RPC
//     request, and at most maxPromptReads requests wait for theirs at once.
//   - Any other body (larger, of unknown length, or not in within the
//     window) needs a reading place: at most MaxBodyReaders at once, at
//     most MaxBodyReadersPerClient from one client address (an IPv4
//     address, or the /64 of an IPv6 one, where one host usually has
//     many), and at most MaxBodyReadersPerPrefix and a fair share (see
//     readPlaces) from one address prefix (IPv4 /24, IPv6 /64). A request
//     that finds none is answered 503 at once, its body left unread, and
//     its connection is closed.
//   - A body must arrive within BodyReadTimeout of the moment its reading
//     starts, and at MinBodyRate bytes a second on average once its first
//     second has passed (bodyRateGrace); a slower one is answered 408 and
//     its connection closed.
//
//   - A request whose bearer already has a good verdict (HTTPConfig.Verified)
//     reads in places of verified tenants only, as many again, at most
//     MaxBodyReadersPerClient and a fair share per tenant: strangers'
//     stalled bodies never stand in its way.
//
// So slow peers compete with each other for reading places, never with
// other clients' prompt requests, verified tokens or the slots calls need;
// a stalled peer holds its place about a second, and peers spread over many
// addresses of a few networks leave places to others. The client address is
// the one behind trusted proxies (clientaddr.go). Taken places never make
// /readyz answer 503: strangers could take them on every replica at once.
// Refusals are counted in Metrics.

// promptBodyBytes, promptWindow and maxPromptReads bound the prompt path:
// while at most maxPromptReads requests wait up to promptWindow each for a
// body of at most promptBodyBytes, they hold at most 64 MiB between them.
const (
	promptBodyBytes = 64 << 10
	promptWindow    = 250 * time.Millisecond
	maxPromptReads  = 1024
)

// bodyRateGrace is the start of a body's reading free of the minimum rate
// (its first bytes may wait on a TCP round trip or two).
const bodyRateGrace = time.Second

// readPlaces hands out the reading places of one kind: at most max at once, at
// most perKey for one key, at most perGroup for one group of keys and,
// while k groups hold places, one that holds some takes another only below
// max/(k+1): k groups then hold at most k/(k+1) of the places, so a new
// group finds one free (groupBusy otherwise). Strangers' places are keyed
// by client key and grouped by prefix (newReaderPlaces); verified tenants'
// are keyed and grouped by tenant (newTenantPlaces). The maps hold one
// entry per key or group with a place taken: at most max entries each.
type readPlaces[K comparable] struct {
	mu                    sync.Mutex
	max, perKey, perGroup int
	group                 func(K) K
	groupBusy             string
	inUse                 int
	byKey, byGroup        map[K]int
}

func newReaderPlaces(n, perClient, perPrefix int) *readPlaces[netip.Prefix] {
	return &readPlaces[netip.Prefix]{max: n, perKey: perClient, perGroup: max(perPrefix, perClient), group: prefixKey,
		groupBusy: reasonPrefixReadersBusy, byKey: map[netip.Prefix]int{}, byGroup: map[netip.Prefix]int{}}
}

func newTenantPlaces(n, per int) *readPlaces[string] {
	return &readPlaces[string]{max: n, perKey: per, perGroup: per, group: func(t string) string { return t },
		groupBusy: reasonClientReadersBusy, byKey: map[string]int{}, byGroup: map[string]int{}}
}

// Shed reasons of the body-reading phase.
const (
	reasonReadersBusy       = "body_readers_busy"
	reasonClientReadersBusy = "client_body_readers_busy"
	reasonPrefixReadersBusy = "prefix_body_readers_busy"
	reasonBodyReadTimeout   = "body_read_timeout"
	reasonBodyTooSlow       = "body_too_slow"
)

// take reserves a place for key (give it back with release), or returns
// the reason it cannot.
func (p *readPlaces[K]) take(key K) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inUse >= p.max {
		return reasonReadersBusy
	}
	if p.byKey[key] >= p.perKey {
		return reasonClientReadersBusy
	}
	g := p.group(key)
	held, k := p.byGroup[g], len(p.byGroup)
	if held >= p.perGroup || held > 0 && k > 1 && held >= p.max/(k+1) {
		return p.groupBusy
	}
	p.inUse++
	p.byKey[key]++
	p.byGroup[g]++
	return ""
}

func (p *readPlaces[K]) release(key K) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inUse--
	dec(p.byKey, key)
	dec(p.byGroup, p.group(key))
}

// dec counts one less for key, forgetting a key that holds none.
func dec[K comparable](m map[K]int, key K) {
	if n := m[key] - 1; n > 0 {
		m[key] = n
	} else {
		delete(m, key)
	}
}

// held returns the places taken now.
func (p *readPlaces[K]) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inUse
}

// verifiedTenant is the tenant of r's bearer when it already has a good
// verdict (HTTPConfig.Verified).
func (st *settings) verifiedTenant(r *http.Request) (string, bool) {
	if st.Authenticate == nil || st.Verified == nil {
		return "", false
	}
	token, err := parseBearer(r.Header)
	if err != nil {
		return "", false
	}
	tenant, ok := st.Verified(token)
	if ok && tenant == "" {
		tenant = hashTenant(token)
	}
	return tenant, ok
}

// prefixKey is the network of a client key: the /24 of an IPv4 address;
// an IPv6 key is its /64 already.
func prefixKey(client netip.Prefix) netip.Prefix {
	if client.Addr().Is4() {
		pfx, _ := client.Addr().Prefix(24)
		return pfx
	}
	return client
}

// clientKey is the address a request's reading place is counted against:
// the remote IPv4 address, or the /64 prefix of a remote IPv6 address. A
// remote address that does not parse (not a TCP peer) shares one key.
func clientKey(remoteAddr string) netip.Prefix {
	ap, _ := netip.ParseAddrPort(remoteAddr)
	return addrKey(ap.Addr())
}

// addrKey is the client key of an address; the zero Prefix for the zero Addr.
func addrKey(a netip.Addr) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	pfx, _ := a.Prefix(bits)
	return pfx
}

// bodyReadMiddleware reads the whole body once for the later stages, as
// above, refusing more than MaxBodyBytes with 413.
func (st *settings) bodyReadMiddleware(places *readPlaces[netip.Prefix], verified *readPlaces[string], next http.Handler) http.Handler {
	prompt := make(chan struct{}, maxPromptReads) // one token per request on the prompt path
	warn := &busyWarning{log: st.logger, message: "refusing /mcp requests: body-reading places taken (slow or stalled senders)",
		attrs: []any{"max_body_readers", st.MaxBodyReaders, "max_body_readers_per_client", st.MaxBodyReadersPerClient}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, x := withExchange(r)
		if r.ContentLength > st.MaxBodyBytes {
			st.bodyTooLarge(w)
			return
		}
		// The body's own deadline (bodyClock). net/http lifts it once the
		// body is read to its end, so it never cuts the call that follows,
		// which its own deadline bounds. A writer that cannot set one (not
		// a real connection) leaves the server's ReadTimeout in charge.
		clock := newBodyClock(http.NewResponseController(w), r.Body, st.BodyReadTimeout, st.MinBodyRate)
		read := make(chan bodyResult, 1)
		start := func() {
			go func() {
				b, err := readBody(clock, r.ContentLength, st.MaxBodyBytes)
				read <- bodyResult{b, err}
			}()
		}

		var res bodyResult
		reading, arrived := false, false // reading: a goroutine reads the body into read
		if r.ContentLength >= 0 && r.ContentLength <= promptBodyBytes {
			select {
			case prompt <- struct{}{}:
				reading = true
				start()
				select {
				case res = <-read:
					arrived = true
				case <-time.After(promptWindow):
				}
				<-prompt
			default: // the prompt path is full: this one needs a place
			}
		}
		if !arrived {
			take, release := st.readingPlace(r, places, verified)
			if reason := take(); reason != "" {
				clock.abandon(w) // also ends a read in progress at once
				if reading {
					<-read // nothing may read the body once the handler returns
				}
				st.refuseReader(w, reason)
				warn.refused()
				return
			}
			if !reading {
				start()
			}
			res = <-read
			release()
		}
		body, err := res.body, res.err
		switch {
		case isTimeout(err) && clock.tooSlow():
			clock.abandon(w)
			writeRPCError(w, http.StatusRequestTimeout, nil, codeServerLimit,
				fmt.Sprintf("the request body arrived slower than %d bytes a second: send it whole and at once", st.MinBodyRate),
				limitData{Reason: reasonBodyTooSlow, MinBodyRate: st.MinBodyRate})
			st.Metrics.Shed(reasonBodyTooSlow)
			return
		case isTimeout(err):
			clock.abandon(w)
			writeRPCError(w, http.StatusRequestTimeout, nil, codeServerLimit,
				fmt.Sprintf("the request body did not arrive within %v: send it whole and at once", st.BodyReadTimeout),
				limitData{Reason: reasonBodyReadTimeout, BodyReadTimeout: st.BodyReadTimeout.String()})
			st.Metrics.BodyReadTimeout()
			return
		case err != nil:
			clock.abandon(w)
			writeRPCError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "could not read the request body", nil)
			return
		case int64(len(body)) > st.MaxBodyBytes:
			st.bodyTooLarge(w)
			return
		}
		x.body = body
		x.env = peekEnvelope(body)
		x.rpcMethod = x.env.Method
		next.ServeHTTP(w, r)
	})
}

// readingPlace picks r's place: its verified tenant's, or its client key's.
func (st *settings) readingPlace(r *http.Request, places *readPlaces[netip.Prefix], verified *readPlaces[string]) (take func() string, release func()) {
	if tenant, ok := st.verifiedTenant(r); ok {
		return func() string { return verified.take(tenant) }, func() { verified.release(tenant) }
	}
	client := clientKeyOf(r)
	return func() string { return places.take(client) }, func() { places.release(client) }
}

// bodyClock reads a body, moving its read deadline as bytes arrive: the
// earlier of start+timeout and the moment the body falls below rate bytes
// a second on average from start, once bodyRateGrace has passed.
type bodyClock struct {
	r         io.Reader
	n         int64 // bytes read so far
	rc        *http.ResponseController
	start     time.Time
	end       time.Time // start + BodyReadTimeout
	rate      int64     // bytes a second; <= 0: no minimum
	mu        sync.Mutex
	deadline  time.Time // the deadline set last
	abandoned bool      // abandon was called: the deadline stays in the past
}

func newBodyClock(rc *http.ResponseController, r io.Reader, timeout time.Duration, rate int64) *bodyClock {
	now := time.Now()
	c := &bodyClock{r: r, rc: rc, start: now, end: now.Add(timeout), rate: rate}
	c.arrived(0)
	return c
}

// arrived sets the deadline for a body of which n bytes have arrived.
func (c *bodyClock) arrived(n int64) {
	d := c.end
	if c.rate > 0 {
		d = c.start.Add(max(bodyRateGrace, time.Duration(float64(n)/float64(c.rate)*float64(time.Second))))
		if d.After(c.end) {
			d = c.end
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.abandoned || d.Equal(c.deadline) {
		return
	}
	c.deadline = d
	_ = c.rc.SetReadDeadline(d)
}

// tooSlow reports whether the deadline that ended the read was the rate's.
func (c *bodyClock) tooSlow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline.Before(c.end)
}

// abandon is abandonBody, after which no arrival moves the deadline again.
func (c *bodyClock) abandon(w http.ResponseWriter) {
	c.mu.Lock()
	c.abandoned = true
	c.mu.Unlock()
	abandonBody(w)
}

// Read reads the body, moving the deadline.
func (c *bodyClock) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	// Not at the end: net/http lifts the deadline when the body ends (inside
	// that Read), and setting one again would cut the call that follows.
	if n > 0 && err == nil {
		c.n += int64(n)
		c.arrived(c.n)
	}
	return n, err
}

// bodyResult is what reading a body gave.
type bodyResult struct {
	body []byte
	err  error
}

// refuseReader answers a request that found no reading place (503).
func (st *settings) refuseReader(w http.ResponseWriter, reason string) {
	data := limitData{Reason: reason, MaxBodyReaders: st.MaxBodyReaders}
	msg := fmt.Sprintf("the server is reading the bodies of %d requests, its limit: send the body whole with the headers, or retry after a second", st.MaxBodyReaders)
	switch reason {
	case reasonClientReadersBusy:
		data = limitData{Reason: reason, MaxBodyReadersPerClient: st.MaxBodyReadersPerClient}
		msg = fmt.Sprintf("the server is reading the bodies of %d requests from your address, its limit per client: send the body whole with the headers, or retry after a second", st.MaxBodyReadersPerClient)
	case reasonPrefixReadersBusy:
		data = limitData{Reason: reason, MaxBodyReadersPerPrefix: st.MaxBodyReadersPerPrefix}
		msg = "the server is reading the bodies of its share of requests from your network (IPv4 /24, IPv6 /64): send the body whole with the headers, or retry after a second"
	}
	w.Header().Set("Retry-After", busyRetryAfter)
	writeRPCError(w, http.StatusServiceUnavailable, nil, codeServerLimit, msg, data)
	st.Metrics.Shed(reason)
}

// bodyTooLarge answers 413 and leaves the rest of the body unread.
func (st *settings) bodyTooLarge(w http.ResponseWriter) {
	abandonBody(w)
	writeRPCError(w, http.StatusRequestEntityTooLarge, nil, mcp.INVALID_REQUEST,
		"request body is larger than the server limit", map[string]int64{"max_body_bytes": st.MaxBodyBytes})
}

// abandonBody makes the reply close the connection, so the server reads no
// more of the body (net/http would wait for up to 256 KiB of it from a peer
// that may never send it).
func abandonBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// presizeMax bounds the buffer reserved for a body from its declared length
// alone, before any of it has arrived: a peer that declares 1 MiB and sends
// one byte holds this much, not a megabyte.
const presizeMax = 64 << 10

// readBody reads at most max+1 bytes of r into a buffer sized by the
// declared length up to presizeMax, growing as bytes arrive.
func readBody(r io.Reader, declared, max int64) ([]byte, error) {
	var b bytes.Buffer
	if declared > 0 {
		b.Grow(int(min(declared, presizeMax)) + bytes.MinRead)
	}
	_, err := b.ReadFrom(io.LimitReader(r, max+1))
	return b.Bytes(), err
}

// isTimeout reports whether a body read failed on its deadline.
func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return errors.Is(err, os.ErrDeadlineExceeded) || ok && ne.Timeout()
}

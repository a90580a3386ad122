package transport

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
)

// Connection bounds. A connection is opened before any request on it can be
// told apart, so these count every peer alike: what strangers without a
// token can open is bounded per address, per network and in total, whatever
// they send on it. A peer that is a trusted proxy (HTTPConfig.TrustedProxies)
// counts only in the total: everyone behind it shares its connections, and
// its idle ones, as one group, may make room like a network's.
//
// No small set of networks can hold the total. While k networks hold
// connections, one that holds some opens another only below
// MaxConns/(k+1), so k networks leave a place for one more; and at the
// total, a newcomer closes an idle connection of the network holding the
// most (when that holds more than the newcomer's network would) instead of
// being refused. A connection that is idle between requests while more
// than half the total is open waits at most pressureIdleTimeout for its
// next request.
const (
	// DefaultMaxConnsPerNetwork caps the open connections of one network
	// (IPv4 /24, IPv6 /64): far more than the people of one network keep
	// open to one MCP server, while several networks competing each keep
	// within their share of MaxConns.
	DefaultMaxConnsPerNetwork = 512
	// DefaultMaxConnsPerAddress caps the open connections of one client
	// address (clientKey: an IPv4 address or IPv6 /64), so one address
	// behind a NAT or a cloud egress leaves its network's other places to
	// its neighbours.
	DefaultMaxConnsPerAddress = 64
	// DefaultMaxConns caps the open connections in all. Each costs memory
	// (ConnBytes): 2,048 hold at most 2048 x ConnBytes = 48 MiB
	// (docs/deploy.md, Memory; the shipped container passes 384, 9 MiB
	// beside the 202 MiB of its other bounds under GOMEMLIMIT 224 MiB). It
	// stays well below a usual file-descriptor limit, so a flood is refused
	// one connection at a time instead of failing every accept (and the RS
	// connections the server opens itself) for want of descriptors.
	DefaultMaxConns = 2048
	// ConnBytes is the memory one open, kept-alive HTTP/1.1 connection
	// holds at most between requests (its goroutine's stack, the server's
	// read and write buffers, the socket's state): the RSS of the server
	// with 1,536 idle connections open rose by 18.7 to 19.4 KiB each
	// (tools/benchrss -conns), and this leaves a fifth above that.
	ConnBytes = 24 << 10
)

// pressureIdleTimeout replaces the server's IdleTimeout while more than
// half of MaxConns are open.
const pressureIdleTimeout = 5 * time.Second

// connRefusal is written to a connection over a bound before it is closed:
// a client sees why, and when to retry, rather than a reset. It fits any
// socket's send buffer, so writing it never blocks the accept loop.
var connRefusal = func() []byte {
	const body = `{"error":"too_many_connections","message":"too many open connections from your address or network, or in all: retry after a second"}`
	return []byte("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// Metrics reasons of a refused connection, and of an idle one evicted.
const (
	reasonNetworkConnsBusy = "network_conns_busy"
	reasonAddressConnsBusy = "address_conns_busy"
	reasonConnsBusy        = "conns_busy"
	reasonIdleConnEvicted  = "idle_conn_evicted"
)

// limitListener accepts connections within the bounds, answering others
// connRefusal and closing them at once. Its maps hold one entry per
// network, address and connection open: at most maxTotal each.
type limitListener struct {
	net.Listener
	perNetwork, perAddress, maxTotal int
	proxies                          proxySet
	metrics                          *metrics.Metrics
	warn                             *busyWarning

	lingering chan struct{} // refusals closing gently (refusalLingerers)

	mu     sync.Mutex
	total  int
	open   map[netip.Prefix]*networkConns // counted networks with a connection open
	byAddr map[netip.Prefix]int           // connections open per client address
	// uncounted are the connections of trusted proxies (and of peers that
	// are not TCP): bound only by the total, and like a network they may
	// give an idle connection to a newcomer.
	uncounted networkConns
}

// networkConns are the open connections of one network (at most
// perNetwork), and how many are idle (between requests, or before one).
type networkConns struct {
	conns map[*limitedConn]struct{}
	idle  int
}

func newLimitListener(ln net.Listener, st *settings) *limitListener {
	return &limitListener{
		Listener:   ln,
		perNetwork: st.MaxConnsPerNetwork,
		perAddress: st.MaxConnsPerAddress,
		maxTotal:   st.MaxConns,
		proxies:    st.proxies,
		metrics:    st.Metrics,
		warn: &busyWarning{log: st.logger, message: "refusing connections: too many open from one address, one network or in all",
			attrs: []any{"max_conns_per_address", st.MaxConnsPerAddress, "max_conns_per_network", st.MaxConnsPerNetwork, "max_conns", st.MaxConns}},
		lingering: make(chan struct{}, refusalLingerers),
		open:      map[netip.Prefix]*networkConns{},
		byAddr:    map[netip.Prefix]int{},
		uncounted: networkConns{conns: map[*limitedConn]struct{}{}},
	}
}

// Accept returns the next connection within the bounds. Each turn of its
// loop returns or closes one connection off the listen queue, so it ends
// when one fits or the listener fails.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l, idle: true}
		lc.network, lc.addr, lc.counted = l.networkOf(c.RemoteAddr())
		reason, evicted := l.take(lc)
		if evicted != nil {
			_ = evicted.Conn.Close() // its server goroutine ends; its place is already lc's
			l.metrics.Shed(reasonIdleConnEvicted)
		}
		if reason != "" {
			l.refuse(c)
			l.metrics.Shed(reason)
			l.warn.refused()
			continue
		}
		return lc, nil
	}
}

// refusalLingerers bounds the refused connections being closed gently at
// once, and refusalLinger how long each may take: past the bound a refused
// connection is closed at once, so the accept loop never waits for one.
const (
	refusalLingerers = 64
	refusalLinger    = 500 * time.Millisecond
)

// refuse answers c with connRefusal and closes it. A peer that sent its
// request first would get a reset (unread data at close) and lose the
// answer, so up to refusalLingerers refusals at a time shut their writing
// side and read what arrives (at most 64 KiB, for refusalLinger) first.
func (l *limitListener) refuse(c net.Conn) {
	select {
	case l.lingering <- struct{}{}:
	default:
		_ = c.SetWriteDeadline(time.Now().Add(refusalLinger))
		_, _ = c.Write(connRefusal)
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.lingering }()
		_ = c.SetDeadline(time.Now().Add(refusalLinger))
		_, _ = c.Write(connRefusal)
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_, _ = io.CopyN(io.Discard, c, 64<<10)
		_ = c.Close()
	}()
}

// networkOf is the network and the client address a peer's connection
// counts against (prefixKey and clientKey: an IPv4 /24 and address, or an
// IPv6 /64 for both), and false for a trusted proxy (counted only in the
// total) or an address that does not parse (not a TCP peer).
func (l *limitListener) networkOf(a net.Addr) (network, addr netip.Prefix, counted bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil || l.proxies.trusted(ap.Addr().Unmap().WithZone("")) {
		return netip.Prefix{}, netip.Prefix{}, false
	}
	addr = clientKey(a.String())
	return prefixKey(addr), addr, true
}

// take counts c, or says which bound it is over. At the total it makes
// room when it can: an idle connection of the network holding the most
// (victim) is no longer counted, and the caller closes it.
func (l *limitListener) take(c *limitedConn) (reason string, victim *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := 0
	if c.counted {
		k := len(l.open) + 1 // the networks holding connections, c's among them
		if nc := l.open[c.network]; nc != nil {
			held, k = len(nc.conns), k-1
		}
		switch {
		case l.byAddr[c.addr] >= l.perAddress:
			return reasonAddressConnsBusy, nil
		case held >= l.perNetwork || held > 0 && k > 1 && held >= l.maxTotal/(k+1):
			return reasonNetworkConnsBusy, nil
		}
	}
	if l.total >= l.maxTotal {
		if victim = l.idleOfBiggest(c.network, held, c.counted); victim == nil {
			return reasonConnsBusy, nil
		}
		l.forget(victim)
	}
	l.total++
	c.placed = true
	nc := &l.uncounted
	if c.counted {
		if nc = l.open[c.network]; nc == nil {
			nc = &networkConns{conns: map[*limitedConn]struct{}{}}
			l.open[c.network] = nc
		}
		l.byAddr[c.addr]++
	}
	nc.conns[c] = struct{}{}
	nc.idle++ // a new connection is idle until its first request arrives
	return "", victim
}

// groupOf is the networkConns c is kept in (held l.mu); nil once forgotten.
func (l *limitListener) groupOf(c *limitedConn) *networkConns {
	if !c.placed {
		return nil
	}
	if !c.counted {
		return &l.uncounted
	}
	return l.open[c.network]
}

// idleOfBiggest returns an idle connection of the network (or of the
// uncounted group) holding the most connections among those with an idle
// one, if that holds at least two more than the newcomer's network (held;
// a trusted proxy's newcomer counts as holding none): closing it never
// leaves the victim's network with fewer than the newcomer's. It looks at
// every network (at most maxTotal) and at the chosen one's connections (at
// most maxTotal), only at the total.
func (l *limitListener) idleOfBiggest(newcomer netip.Prefix, held int, counted bool) *limitedConn {
	var biggest *networkConns
	if l.uncounted.idle > 0 {
		biggest = &l.uncounted
	}
	for network, nc := range l.open {
		if nc.idle == 0 || counted && network == newcomer {
			continue
		}
		if biggest == nil || len(nc.conns) > len(biggest.conns) {
			biggest = nc
		}
	}
	if biggest == nil || len(biggest.conns) < held+2 {
		return nil
	}
	for c := range biggest.conns {
		if c.idle {
			return c
		}
	}
	return nil
}

// forget stops counting c (held l.mu); it is called once per placed
// connection, on its close or when it is chosen to make room.
func (l *limitListener) forget(c *limitedConn) {
	if !c.placed {
		return
	}
	nc := l.groupOf(c)
	c.placed = false
	l.total--
	delete(nc.conns, c)
	if c.idle {
		nc.idle--
	}
	if !c.counted {
		return
	}
	if len(nc.conns) == 0 {
		delete(l.open, c.network)
	}
	dec(l.byAddr, c.addr)
}

// connState is the http.Server's ConnState hook: it keeps each
// connection's idle mark (new or between requests: one that may be closed
// to make room) and, when one turns idle while more than half of maxTotal
// are open, has its next read deadline (the server's idle timeout, set
// right after) shortened to pressureIdleTimeout.
func (l *limitListener) connState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	idle := state == http.StateNew || state == http.StateIdle
	l.mu.Lock()
	defer l.mu.Unlock()
	if nc := l.groupOf(c); nc != nil && c.idle != idle {
		if idle {
			nc.idle++
		} else {
			nc.idle--
		}
	}
	c.idle = idle
	c.shortenNextDeadline.Store(state == http.StateIdle && 2*l.total > l.maxTotal)
}

// limitedConn gives its place back once, on its first Close (or earlier,
// when it is chosen to make room: then its Close gives back nothing). Its
// marks are guarded by l.mu. Closing an idle connection to make room races,
// as an idle timeout does, with a request arriving at that instant: that
// one finds its connection closed.
type limitedConn struct {
	net.Conn
	l               *limitListener
	network, addr   netip.Prefix
	counted, placed bool
	idle            bool
	// shortenNextDeadline: the next SetReadDeadline (the server's idle
	// timeout) is cut to pressureIdleTimeout.
	shortenNextDeadline atomic.Bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.forget(c)
	c.l.mu.Unlock()
	return err
}

func (c *limitedConn) SetReadDeadline(t time.Time) error {
	shorten := c.shortenNextDeadline.Swap(false)
	if soon := time.Now().Add(pressureIdleTimeout); shorten && (t.IsZero() || t.After(soon)) {
		t = soon
	}
	return c.Conn.SetReadDeadline(t)
}

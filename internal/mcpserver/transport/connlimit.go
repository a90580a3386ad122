package transport

import (
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
)

// Connection bounds. A connection is opened before any request on it can be
// told apart, so these count every peer alike: what strangers without a
// token can open is bounded per network and in total, whatever they send on
// it. A peer that is a trusted proxy (HTTPConfig.TrustedProxies) counts only
// in the total: everyone behind it shares its connections.
const (
	// DefaultMaxConnsPerNetwork caps the open connections of one network
	// (IPv4 /24, IPv6 /64): 512 is far more than the people of one network
	// keep open to one MCP server, while a sender that fills it holds at
	// most that many of the server's goroutines and requests in turn, so
	// a request on another network's connection waits behind at most a few
	// hundred of its requests, not thousands.
	DefaultMaxConnsPerNetwork = 512
	// DefaultMaxConns caps the open connections in all, well below a usual
	// file-descriptor limit (20,000 or more), so a flood of connections is
	// refused one by one instead of failing every accept (and the RS
	// connections the server opens itself) for want of descriptors.
	DefaultMaxConns = 8192
)

// connRefusal is written to a connection over a bound before it is closed:
// a client sees why, and when to retry, rather than a reset. It fits any
// socket's send buffer, so writing it never blocks the accept loop.
var connRefusal = func() []byte {
	const body = `{"error":"too_many_connections","message":"too many open connections from your network or in all: retry after a second"}`
	return []byte("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// Metrics reasons of a refused connection.
const (
	reasonNetworkConnsBusy = "network_conns_busy"
	reasonConnsBusy        = "conns_busy"
)

// limitListener accepts connections within the bounds: over them, it
// answers connRefusal and closes the connection at once, and goes on
// accepting. Its map holds one entry per network with an open connection,
// so at most maxTotal entries.
type limitListener struct {
	net.Listener
	perNetwork, maxTotal int
	proxies              proxySet
	metrics              *metrics.Metrics
	warn                 *busyWarning

	lingering chan struct{} // refusals closing gently (refusalLingerers)

	mu    sync.Mutex
	total int
	open  map[netip.Prefix]int
}

func newLimitListener(ln net.Listener, st *settings) *limitListener {
	return &limitListener{
		Listener:   ln,
		perNetwork: st.MaxConnsPerNetwork,
		maxTotal:   st.MaxConns,
		proxies:    st.proxies,
		metrics:    st.Metrics,
		warn: &busyWarning{log: st.logger, message: "refusing connections: too many open from one network or in all",
			attrs: []any{"max_conns_per_network", st.MaxConnsPerNetwork, "max_conns", st.MaxConns}},
		lingering: make(chan struct{}, refusalLingerers),
		open:      map[netip.Prefix]int{},
	}
}

// Accept returns the next connection within the bounds. Each turn of its
// loop takes one connection off the listen queue and either returns it or
// closes it, so it ends when one fits or the listener fails.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		network, counted := l.networkOf(c.RemoteAddr())
		if reason := l.take(network, counted); reason != "" {
			l.refuse(c)
			l.metrics.Shed(reason)
			l.warn.refused()
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.release(network, counted) }}, nil
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
// request before the refusal would otherwise get a reset (unread data at
// close) and lose the answer, so up to refusalLingerers refusals at a time
// shut their writing side and read what arrives (at most 64 KiB, for at
// most refusalLinger) before they close.
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

// networkOf is the network a peer's connection counts against (prefixKey
// of its clientKey: an IPv4 /24 or IPv6 /64), and false for a trusted proxy
// (counted only in the total) or an address that does not parse (not a TCP
// peer).
func (l *limitListener) networkOf(a net.Addr) (netip.Prefix, bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil || l.proxies.trusted(ap.Addr().Unmap().WithZone("")) {
		return netip.Prefix{}, false
	}
	return prefixKey(clientKey(a.String())), true
}

// take counts a new connection, or says which bound it is over.
func (l *limitListener) take(network netip.Prefix, counted bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.maxTotal {
		return reasonConnsBusy
	}
	if counted && l.open[network] >= l.perNetwork {
		return reasonNetworkConnsBusy
	}
	l.total++
	if counted {
		l.open[network]++
	}
	return ""
}

func (l *limitListener) release(network netip.Prefix, counted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if !counted {
		return
	}
	if n := l.open[network] - 1; n > 0 {
		l.open[network] = n
	} else {
		delete(l.open, network)
	}
}

// limitedConn gives its place back once, on its first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

package transport

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// TestConnectionBounds: ServeHTTP answers a connection over the per-network
// or the total bound with 503 and closes it, goes on serving every other
// connection, gives a place back when a connection closes, and counts a
// trusted proxy's connections only in the total.
func TestConnectionBounds(t *testing.T) {
	tests := []struct {
		name    string
		cfg     HTTPConfig
		held    []string // peers whose connections stay open
		refused string   // a peer whose next connection is refused
		served  string   // a peer whose next connection is served
	}{
		{"per network", HTTPConfig{MaxConnsPerNetwork: 3},
			[]string{"127.0.70.1", "127.0.70.2", "127.0.70.3"}, "127.0.70.4", "127.0.71.1"},
		{"in all", HTTPConfig{MaxConns: 3, MaxConnsPerNetwork: 100},
			[]string{"127.0.73.1", "127.0.74.1", "127.0.75.1"}, "127.0.76.1", ""},
		{"a trusted proxy counts only in all", HTTPConfig{MaxConnsPerNetwork: 2, TrustedProxies: []string{"127.0.72.0/24"}},
			[]string{"127.0.72.1", "127.0.72.2", "127.0.72.3"}, "", "127.0.72.4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url, cancel, _ := startServing(t, testTools{}, tc.cfg)
			defer cancel()
			addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
			var held []net.Conn
			for _, ip := range tc.held {
				c := dialAndProbe(t, addr, ip, http.StatusOK) // served, then kept open
				held = append(held, c)
			}
			defer func() {
				for _, c := range held {
					_ = c.Close()
				}
			}()
			if tc.refused != "" {
				c := dialAndProbe(t, addr, tc.refused, http.StatusServiceUnavailable)
				_ = c.Close()
				// The place comes back when a held connection closes.
				_ = held[0].Close()
				held = held[1:]
				testkit.Eventually(testkit.Patience, func() bool {
					c, status := dialProbe(t, addr, tc.refused)
					_ = c.Close()
					return status == http.StatusOK
				})
			}
			if tc.served != "" {
				c := dialAndProbe(t, addr, tc.served, http.StatusOK)
				_ = c.Close()
			}
		})
	}
}

// dialProbe opens a connection from ip and asks /healthz once on it,
// returning the connection (open unless the server closed it) and the status
// (0 when no answer could be read).
func dialProbe(t *testing.T, addr, ip string) (net.Conn, int) {
	t.Helper()
	c, err := dialFrom(ip).Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		return c, 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, 0
	}
	_ = resp.Body.Close()
	_ = c.SetDeadline(time.Time{})
	return c, resp.StatusCode
}

func dialAndProbe(t *testing.T, addr, ip string, want int) net.Conn {
	t.Helper()
	c, status := dialProbe(t, addr, ip)
	if status != want {
		t.Fatalf("connection from %s: status %d, want %d", ip, status, want)
	}
	return c
}

// heldConns opens n connections from ip, each served one /healthz and then
// kept open idle, and closes them when the test ends.
func heldConns(t *testing.T, addr, ip string, n int) []net.Conn {
	t.Helper()
	var out []net.Conn
	for range n {
		c := dialAndProbe(t, addr, ip, http.StatusOK)
		t.Cleanup(func() { _ = c.Close() })
		out = append(out, c)
	}
	return out
}

// closedByServer counts the connections of cs the server has closed: a
// read returns EOF (or a reset) at once, where an open idle connection
// only times out.
func closedByServer(cs []net.Conn) int {
	n := 0
	for _, c := range cs {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		var b [1]byte
		_, err := c.Read(b[:])
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			n++
		}
	}
	return n
}

// TestNoFewNetworksHoldTheTotal: while other networks hold connections, a
// network's share shrinks (it is refused far below the total and its own
// cap) and a new network still finds room; one address holds at most
// MaxConnsPerAddress, leaving its network's other places to its
// neighbours; at the total, a newcomer from another network is served by
// closing an idle connection of the network holding the most.
func TestNoFewNetworksHoldTheTotal(t *testing.T) {
	t.Run("a network's share shrinks while others hold connections", func(t *testing.T) {
		url, cancel, _ := startServing(t, testTools{}, HTTPConfig{MaxConns: 9, MaxConnsPerNetwork: 100, MaxConnsPerAddress: 100})
		defer cancel()
		addr := hostOf(url)
		heldConns(t, addr, "127.0.90.1", 1)
		// Two networks hold: each keeps below 9/3 = 3.
		heldConns(t, addr, "127.0.91.1", 3)
		c := dialAndProbe(t, addr, "127.0.91.1", http.StatusServiceUnavailable)
		_ = c.Close()
		// Four open of nine: a new network finds room, and so does a third.
		heldConns(t, addr, "127.0.92.1", 1)
		heldConns(t, addr, "127.0.93.1", 1)
	})
	t.Run("one address holds less than its network", func(t *testing.T) {
		url, cancel, _ := startServing(t, testTools{}, HTTPConfig{MaxConnsPerAddress: 3, MaxConnsPerNetwork: 100})
		defer cancel()
		addr := hostOf(url)
		heldConns(t, addr, "127.0.94.1", 3)
		c := dialAndProbe(t, addr, "127.0.94.1", http.StatusServiceUnavailable)
		_ = c.Close()
		heldConns(t, addr, "127.0.94.2", 3) // a neighbour in the same /24
	})
	t.Run("at the total an idle connection of the biggest holder makes room", func(t *testing.T) {
		url, cancel, _ := startServing(t, testTools{}, HTTPConfig{MaxConns: 6, MaxConnsPerNetwork: 100, MaxConnsPerAddress: 100})
		defer cancel()
		addr := hostOf(url)
		big := heldConns(t, addr, "127.0.96.1", 5) // taken while alone
		small := heldConns(t, addr, "127.0.95.1", 1)
		// Six of six open: a newcomer closes one of the five, not the one.
		heldConns(t, addr, "127.0.97.1", 1)
		if !testkit.Eventually(testkit.Patience, func() bool { return closedByServer(big) == 1 }) {
			t.Fatalf("%d of the biggest holder's idle connections closed for the newcomer, want 1", closedByServer(big))
		}
		if n := closedByServer(small); n != 0 {
			t.Fatalf("the small holder lost %d connections", n)
		}
		// The biggest holder, now among three networks, is over its share
		// (6/4): it cannot take the place back.
		c := dialAndProbe(t, addr, "127.0.96.1", http.StatusServiceUnavailable)
		_ = c.Close()
		heldConns(t, addr, "127.0.98.1", 1) // another newcomer: again from the biggest
	})
	t.Run("a trusted proxy's idle connections make room too", func(t *testing.T) {
		url, cancel, _ := startServing(t, testTools{}, HTTPConfig{MaxConns: 3, TrustedProxies: []string{"127.0.103.0/24"}})
		defer cancel()
		addr := hostOf(url)
		proxy := heldConns(t, addr, "127.0.103.1", 3)
		heldConns(t, addr, "127.0.103.2", 1) // the proxy's new connection replaces an idle one
		if !testkit.Eventually(testkit.Patience, func() bool { return closedByServer(proxy) == 1 }) {
			t.Fatalf("%d of the proxy's idle connections closed, want 1", closedByServer(proxy))
		}
	})
	t.Run("an idle connection waits briefly while more than half are open", func(t *testing.T) {
		// The idle timeout is ten minutes: only the pressure closes a
		// connection within the patience.
		url, cancel, _ := startServing(t, testTools{}, HTTPConfig{MaxConns: 4, MaxConnsPerNetwork: 100, MaxConnsPerAddress: 100, IdleTimeout: 10 * time.Minute})
		defer cancel()
		addr := hostOf(url)
		held := heldConns(t, addr, "127.0.99.1", 3) // the third turns idle with three of four open
		if !testkit.Eventually(testkit.Patience, func() bool { return closedByServer(held[2:]) == 1 }) {
			t.Fatal("a connection idle under pressure was not closed within the patience, want within pressureIdleTimeout")
		}
	})
}

func hostOf(url string) string {
	return strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
}

// TestAdminListenerServesProbesWhilePublicIsFull: with every connection of
// the public listener taken, a new connection there is refused, while the
// admin listener still answers /healthz, /readyz and /metrics.
func TestAdminListenerServesProbesWhilePublicIsFull(t *testing.T) {
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url, cancel, _ := startServing(t, testTools{}, HTTPConfig{MaxConns: 2, Metrics: metrics.New(), AdminListener: admin})
	defer cancel()
	addr := hostOf(url)
	heldConns(t, addr, "127.0.100.1", 1)
	heldConns(t, addr, "127.0.101.1", 1)
	c := dialAndProbe(t, addr, "127.0.102.1", http.StatusServiceUnavailable)
	_ = c.Close()
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/mcp"} {
		t.Run(path, func(t *testing.T) {
			want := http.StatusOK
			if path == "/mcp" {
				want = http.StatusNotFound // the admin listener serves no MCP
			}
			resp, err := http.Get("http://" + admin.Addr().String() + path)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != want {
				t.Fatalf("admin %s: status %d, want %d", path, resp.StatusCode, want)
			}
		})
	}
}

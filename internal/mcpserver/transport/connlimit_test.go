package transport

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

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

package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/tokencheck"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// sendFrom posts body to url with bearer from the loopback address ip, with
// extra headers, and returns the status and body.
func sendFrom(ctx context.Context, c *http.Client, url, bearer, body string, extra map[string]string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// clientFrom is an HTTP client whose connections leave from loopback ip.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 8}}
}

// TestHTTPTrustedProxyKeepsFirstChecksApart: behind a trusted proxy (every
// request reaches the server from one address), one client sending made-up
// bearers as fast as it can empties only its own bucket of token checks:
// another client's first token check is still made and served. From an
// untrusted peer the forwarded header is ignored: the two share the
// peer's bucket, and the second is refused token_check_unavailable.
func TestHTTPTrustedProxyKeepsFirstChecksApart(t *testing.T) {
	tests := []struct {
		name    string
		trusted string
		want    int
	}{
		{"trusted proxy", "127.0.0.0/8", http.StatusOK},
		{"untrusted peer", "", http.StatusServiceUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := newFaultRS(t)
			h := httpFlagsFor(rs.url)
			h.TrustedProxies = tc.trusted
			mcpURL := startHTTPWith(t, &h)
			proxy := clientFrom("127.0.0.1")
			ctx := context.Background()
			attacker := map[string]string{"X-Forwarded-For": "203.0.113.66"}
			refused := 0
			for i := range tokencheck.DefaultCheckBurst + 30 {
				status, _, err := sendFrom(ctx, proxy, mcpURL, fmt.Sprintf("made-up-%d", i), listBody, attacker)
				if err != nil {
					t.Fatal(err)
				}
				if status == http.StatusServiceUnavailable {
					refused++
				}
			}
			if refused == 0 {
				t.Fatal("the attacker's bucket of checks never ran out")
			}
			status, body, err := sendFrom(ctx, proxy, mcpURL, fixedTokens["narrow"], listBody, map[string]string{"X-Forwarded-For": "198.51.100.7"})
			if err != nil || status != tc.want {
				t.Fatalf("another client's first check: %v %d %.300s", err, status, body)
			}
			if tc.want != http.StatusOK && !strings.Contains(body, tokencheck.CodeUnavailable) {
				t.Fatalf("refusal: %.300s", body)
			}
		})
	}
}

// TestHTTPMadeUpBearersLeaveDataConnections: 40 client addresses send
// made-up bearers whose schema reads the RS holds (an RS slow to reject),
// more of them than the RS connections data calls use. A token with a
// cached verdict keeps every data call answered: checks wait in the
// line of token checks and read the RS through connections of their own.
func TestHTTPMadeUpBearersLeaveDataConnections(t *testing.T) {
	rs := newFaultRS(t)
	release := make(chan struct{})
	var held, peak atomic.Int64
	rs.set(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/v1/schema" || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer made-up") {
			return false
		}
		n := held.Add(1)
		defer held.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return failWith(http.StatusUnauthorized, `{"error":{"type":"authentication_error","code":"context.active_false","message":"token is not active"}}`,
			func(*http.Request) bool { return true })(w, r)
	})
	mcpURL := startHTTP(t, rs.url)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); close(release); wg.Wait() }()
	honest := clientFrom("127.0.99.5")
	if status, body, err := sendFrom(ctx, honest, mcpURL, fixedTokens["client"], fetchBody, nil); err != nil || status != http.StatusOK {
		t.Fatalf("first call: %v %d %.300s", err, status, body)
	}
	for a := range 40 {
		c := clientFrom(fmt.Sprintf("127.0.%d.%d", 70+a/4, 1+a%4))
		for g := range 3 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					status, _, err := sendFrom(ctx, c, mcpURL, fmt.Sprintf("made-up-%d-%d-%d", a, g, i), listBody, nil)
					if err == nil && status == http.StatusServiceUnavailable {
						time.Sleep(20 * time.Millisecond)
					}
				}
			})
		}
	}
	// The checks run in the places of the line strangers may take (three
	// quarters of --max-unverified-requests, 16 by default).
	testkit.Eventually(testkit.Patience, func() bool { return held.Load() >= tokencheck.MaxCheckConns/2 })
	time.Sleep(200 * time.Millisecond)
	if n := peak.Load(); n > tokencheck.MaxCheckConns {
		t.Fatalf("%d schema reads held at once, over the checks' %d connections", n, tokencheck.MaxCheckConns)
	}
	const calls = 20
	answered := 0
	for range calls {
		status, body, err := sendFrom(ctx, honest, mcpURL, fixedTokens["client"], fetchBody, nil)
		if err == nil && status == http.StatusOK && !strings.Contains(body, `"isError":true`) {
			answered++
		} else {
			t.Logf("verified call: %v %d %.200s", err, status, body)
		}
	}
	if answered < calls {
		t.Fatalf("%d of %d verified calls answered while made-up bearers' checks hung", answered, calls)
	}
}

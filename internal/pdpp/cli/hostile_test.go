package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// TestLongURIsCostNoMatching sends resource URIs and a tool name of 1 MiB
// each to the hosted server over HTTP, as an authenticated client would: each
// is refused with JSON-RPC -32602 and a typed too_long error naming the
// member, without echoing it, and three 1 MiB URIs cost the whole process
// (client side included) under 150 ms of CPU, where matching them against
// the resource templates cost seconds.
func TestLongURIsCostNoMatching(t *testing.T) {
	mcpURL := startHTTPWith(t, boundsFlags(demoRS(t), 10*time.Second)) // 4 MiB bodies
	long := strings.Repeat("a", 1<<20)
	uris := []string{"pdpp://record/" + long, "pdpp://stream/" + long, "pdpp://x" + strings.Repeat("/", 1<<20)}
	bodies := make([]string, len(uris))
	for i, u := range uris {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "resources/read", "params": map[string]any{"uri": u}})
		bodies[i] = string(b)
	}
	check := func(t *testing.T, b []byte, param string, limit int) {
		t.Helper()
		var reply struct {
			Error *struct {
				Code int            `json:"code"`
				Data map[string]any `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &reply) != nil || reply.Error == nil || reply.Error.Code != -32602 {
			t.Fatalf("want a -32602 error, got %.300s", b)
		}
		if reply.Error.Data["code"] != "too_long" || reply.Error.Data["param"] != param || reply.Error.Data["max_bytes"] != float64(limit) {
			t.Fatalf("typed error %v, want too_long on %s at %d", reply.Error.Data, param, limit)
		}
		if len(b) > 1024 {
			t.Fatalf("a %d-byte reply: the refused member is echoed", len(b))
		}
	}
	// Warm up: the token check and first-use costs are not what is measured.
	if status, b := postMCP(t, mcpURL, `{"jsonrpc":"2.0","id":0,"method":"resources/read","params":{"uri":"pdpp://stream/`+strings.Repeat("a", 5000)+`"}}`); status != http.StatusOK {
		t.Fatalf("warm-up: %d %s", status, b)
	}
	runtime.GC()
	before, ok := testkit.ProcessCPU()
	if !ok {
		t.Skip("process CPU time is not available on this platform")
	}
	replies := make([][]byte, len(bodies))
	for i, body := range bodies {
		status, b := postMCP(t, mcpURL, body)
		if status != http.StatusOK {
			t.Fatalf("status %d: %.300s", status, b)
		}
		replies[i] = b
	}
	after, _ := testkit.ProcessCPU()
	for i, b := range replies {
		t.Run(uris[i][:16], func(t *testing.T) { check(t, b, "uri", mcptools.MaxResourceURIBytes) })
	}
	t.Logf("three 1 MiB URIs: %v of CPU", after-before)
	if spent, budget := after-before, testkit.CPUBudget(150*time.Millisecond); spent > budget {
		t.Errorf("three 1 MiB URIs cost %v of CPU, want under %v", spent, budget)
	}

	t.Run("tool name", func(t *testing.T) {
		status, b := postMCP(t, mcpURL, toolCall(9, strings.Repeat("n", 1<<20), map[string]any{}))
		if status != http.StatusOK {
			t.Fatalf("status %d: %.300s", status, b)
		}
		check(t, b, "name", mcptools.MaxToolNameBytes)
	})
	t.Run("URI at the bound still reaches its handler", func(t *testing.T) {
		uri := "pdpp://stream/" + strings.Repeat("a", mcptools.MaxResourceURIBytes-len("pdpp://stream/"))
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": map[string]any{"uri": uri}})
		_, reply := postMCP(t, mcpURL, string(b))
		if !strings.Contains(string(reply), `"invalid_uri"`) && !strings.Contains(string(reply), `"invalid_id"`) {
			t.Fatalf("a URI within the bound did not reach the stream handler's own check: %.300s", reply)
		}
	})
}

// slowPeer is one connection that sent its request headers and the first
// byte of a body it declared longer, and holds the rest back.
type slowPeer struct {
	conn   net.Conn
	status chan int // the status of the answer, once one came (0: none, connection closed)
}

// openSlowPeers opens n such connections to addr from the default local
// address, each declaring a body of declared bytes, and reads each one's
// answer in the background.
func openSlowPeers(t *testing.T, addr string, n, declared int) []*slowPeer {
	t.Helper()
	peers := make([]*slowPeer, 0, n)
	for range n {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n{",
			addr, fixedTokens["client"], declared)
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		p := &slowPeer{conn: conn, status: make(chan int, 1)}
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				p.status <- 0
				return
			}
			_ = resp.Body.Close()
			p.status <- resp.StatusCode
		}()
		peers = append(peers, p)
	}
	return peers
}

// answered waits, for at most within, until wantAnswered of peers have an
// answer, and returns the statuses counted and the peers still waiting.
func answered(peers []*slowPeer, wantAnswered int, within time.Duration) (map[int]int, []*slowPeer) {
	got := map[int]int{}
	pending := append([]*slowPeer(nil), peers...)
	deadline := time.Now().Add(within)
	for len(peers)-len(pending) < wantAnswered && time.Now().Before(deadline) {
		still := pending[:0]
		for _, p := range pending {
			select {
			case s := <-p.status:
				got[s]++
			default:
				still = append(still, p)
			}
		}
		pending = still
		time.Sleep(10 * time.Millisecond)
	}
	return got, pending
}

// TestHalfSentBodiesDoNotStarve replays the starvation attack over real
// loopback HTTP against the hosted server with its default bounds: 256
// connections, all from one address, send their headers and one byte of a
// 100,000-byte body, then 256 more do the same with a body small enough for
// the prompt path. None of them takes a request slot: all but the
// per-address reading places (16) are refused at once with 503, an
// authenticated call from that same address still succeeds within 5 s,
// /readyz answers 200 (the server can serve), and the held bodies run out of
// time with 408. Refusals and timeouts are counted in the metrics.
func TestHalfSentBodiesDoNotStarve(t *testing.T) {
	h := httpFlagsFor(demoRS(t))
	h.BodyReadTimeout = 3 * time.Second
	// The minimum rate would cut these bodies after a second; this test is
	// about the read timeout and the places (transport's
	// TestStalledBodiesFromManyNetworks covers the rate).
	h.MinBodyRate = -1
	// One address may hold 64 connections by default; this test is about
	// the reading places of its 256 (transport's TestNoFewNetworksHoldTheTotal
	// covers the per-address connection cap).
	h.MaxConnsPerAddress = 1024
	h.MetricsListen = "127.0.0.1:0"
	addr, metricsAddr := serveForTest(t, context.Background(), slog.New(slog.DiscardHandler), &h)
	mcpURL, readyURL := "http://"+addr.String()+"/mcp", "http://"+addr.String()+"/readyz"
	perClient := int(h.Config(nil).MaxBodyReadersPerClient)
	if perClient == 0 {
		perClient = transport.DefaultMaxBodyReadersPerClient
	}

	for _, declared := range []int{100_000, 1000} {
		t.Run(fmt.Sprintf("bodies of %d bytes", declared), func(t *testing.T) {
			start := time.Now()
			peers := openSlowPeers(t, addr.String(), 256, declared)
			got, waiting := answered(peers, 256-perClient, 5*time.Second)
			if got[http.StatusServiceUnavailable] != 256-perClient || len(waiting) != perClient {
				t.Fatalf("answers %v with %d still waiting, want %d refused with 503 and %d reading", got, len(waiting), 256-perClient, perClient)
			}

			// An authenticated call from the same address, with its body
			// sent whole, is served while the slow peers hold their places.
			callStart := time.Now()
			resp, body := postRPC(t, mcpURL, toolCall(1, "search", map[string]any{"q": "zephyrmarker", "limit": 1}),
				map[string]string{"Authorization": "Bearer " + fixedTokens["client"], "MCP-Protocol-Version": "2025-11-25"})
			if resp.StatusCode != http.StatusOK || strings.Contains(string(body), `"isError":true`) || time.Since(callStart) > 5*time.Second {
				t.Fatalf("authenticated call: %s after %v: %.300s", resp.Status, time.Since(callStart), body)
			}
			if resp, body := testkit.Do(t, http.MethodGet, readyURL, "", nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("/readyz while slow peers wait outside the slots: %s %s", resp.Status, body)
			}

			// The held bodies run out of time.
			got, waiting = answered(waiting, perClient, 10*time.Second)
			if got[http.StatusRequestTimeout] != perClient || len(waiting) != 0 {
				t.Fatalf("after the body read timeout: %v, %d waiting; want %d answered 408", got, len(waiting), perClient)
			}
			if elapsed := time.Since(start); elapsed < h.BodyReadTimeout {
				t.Fatalf("the held bodies were refused after %v, before the %v body read timeout", elapsed, h.BodyReadTimeout)
			}
		})
	}

	fams := testkit.Scrape(t, "http://"+metricsAddr.String()+"/metrics")
	if n, _ := testkit.Sample(fams, metrics.NameShed, map[string]string{"reason": "client_body_readers_busy"}); n != float64(2*(256-perClient)) {
		t.Errorf("%s{client_body_readers_busy} = %v, want %d", metrics.NameShed, n, 2*(256-perClient))
	}
	if n, _ := testkit.Sample(fams, metrics.NameShed, map[string]string{"reason": "server_busy"}); n != 0 {
		t.Errorf("%s{server_busy} = %v: a slow peer took a request slot", metrics.NameShed, n)
	}
	if n, _ := testkit.Sample(fams, metrics.NameBodyTimeouts, nil); n != float64(2*perClient) {
		t.Errorf("%s = %v, want %d", metrics.NameBodyTimeouts, n, 2*perClient)
	}
}

package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/papertools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// TestLongURIsCostNoMatching sends paper:// URIs and a tool name of 1 MiB
// each to the hosted paper server over HTTP, without a bearer as its
// default allows: each is refused with JSON-RPC -32602 and a typed too_long
// error naming the member, without echoing it, and three 1 MiB URIs cost
// the whole process (client side included) under 150 ms of CPU.
func TestLongURIsCostNoMatching(t *testing.T) {
	h := httpFlags{}
	h.MaxBodyBytes = 4 << 20
	url := startHTTP(t, h)
	long := strings.Repeat("a", 1<<20)
	uris := []string{"paper://" + long + "/metadata", "paper://p/summary/" + long, "paper://" + strings.Repeat("/", 1<<20)}
	bodies := make([]string, len(uris))
	for i, u := range uris {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "resources/read", "params": map[string]any{"uri": u}})
		bodies[i] = string(b)
	}
	check := func(t *testing.T, body, param string, limit int) {
		t.Helper()
		var reply struct {
			Error *struct {
				Code int            `json:"code"`
				Data map[string]any `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(body), &reply) != nil || reply.Error == nil || reply.Error.Code != -32602 {
			t.Fatalf("want a -32602 error, got %.300s", body)
		}
		if reply.Error.Data["code"] != "too_long" || reply.Error.Data["param"] != param || reply.Error.Data["max_bytes"] != float64(limit) {
			t.Fatalf("typed error %v, want too_long on %s at %d", reply.Error.Data, param, limit)
		}
		if len(body) > 1024 {
			t.Fatalf("a %d-byte reply: the refused member is echoed", len(body))
		}
	}
	if resp, body := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":0,"method":"resources/read","params":{"uri":"paper://x/metadata"}}`, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("warm-up: %d %s", resp.StatusCode, body)
	}
	runtime.GC()
	before, ok := testkit.ProcessCPU()
	if !ok {
		t.Skip("process CPU time is not available on this platform")
	}
	replies := make([]string, len(bodies))
	for i, body := range bodies {
		resp, b := do(t, http.MethodPost, url, body, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %.300s", resp.StatusCode, b)
		}
		replies[i] = b
	}
	after, _ := testkit.ProcessCPU()
	for i, b := range replies {
		t.Run(uris[i][:16], func(t *testing.T) { check(t, b, "uri", papertools.MaxResourceURIBytes) })
	}
	t.Logf("three 1 MiB URIs: %v of CPU", after-before)
	if spent, budget := after-before, testkit.CPUBudget(150*time.Millisecond); spent > budget {
		t.Errorf("three 1 MiB URIs cost %v of CPU, want under %v", spent, budget)
	}
	t.Run("tool name", func(t *testing.T) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{"name": strings.Repeat("n", 1<<20), "arguments": map[string]any{}}})
		resp, body := do(t, http.MethodPost, url, string(b), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %.300s", resp.StatusCode, body)
		}
		check(t, body, "name", papertools.MaxToolNameBytes)
	})
}

// TestHalfSentBodiesDoNotStarve: the paper server, open without a bearer as
// by default, shares the transport's body phase: 256 connections from one
// address that send headers and one byte of a 100,000-byte body hold no
// request slot (all but 16 are refused at once), and a search from the same
// address is served within 5 s while /readyz answers 200.
func TestHalfSentBodiesDoNotStarve(t *testing.T) {
	h := httpFlags{}
	h.BodyReadTimeout = 2 * time.Second
	url := startHTTP(t, h)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	statuses := make(chan int, 256)
	for range 256 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr)
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				statuses <- 0
				return
			}
			_ = resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	refused := 0
	for refused < 256-16 {
		select {
		case s := <-statuses:
			if s != http.StatusServiceUnavailable {
				t.Fatalf("a slow peer got %d before the body read timeout", s)
			}
			refused++
		case <-time.After(5 * time.Second):
			t.Fatalf("%d slow peers refused, want %d", refused, 256-16)
		}
	}
	start := time.Now()
	resp, body := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_papers","arguments":{"query":"vision"}}}`,
		map[string]string{"MCP-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) || time.Since(start) > 5*time.Second {
		t.Fatalf("search beside 256 slow peers: %d after %v: %.300s", resp.StatusCode, time.Since(start), body)
	}
	if resp, body := do(t, http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/readyz", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz: %d %s", resp.StatusCode, body)
	}
	for range 16 {
		select {
		case s := <-statuses:
			if s != http.StatusRequestTimeout {
				t.Fatalf("a held body ended with %d, want 408", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a held body was never answered")
		}
	}
}

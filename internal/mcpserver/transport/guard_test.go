package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// TestRequestGuard sends a resources/read URI and a tools/call name over
// and within their bounds, over stdio and over HTTP: the long ones are
// JSON-RPC -32602 with the typed too_long error as data and never reach a
// handler; the ones within the bound are served as before.
func TestRequestGuard(t *testing.T) {
	bounds := RequestBounds{ResourceURIBytes: 64, ToolNameBytes: 8}
	long := "note://" + strings.Repeat("x", 100)
	tests := []struct {
		name, body string
		param      string // "": served
	}{
		{"long URI", rpc(1, "resources/read", map[string]any{"uri": long}), "uri"},
		{"long URI, escaped member name", `{"jsonrpc":"2.0","id":1,"method":"resources\/read","params":{"\u0075ri":"` + long + `"}}`, "uri"},
		{"long tool name", rpc(2, "tools/call", map[string]any{"name": "echo" + strings.Repeat("o", 10), "arguments": map[string]any{"text": "x"}}), "name"},
		{"URI within the bound", rpc(3, "resources/read", map[string]any{"uri": "note://n1"}), ""},
		{"tool name within the bound", rpc(4, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}), ""},
	}
	check := func(t *testing.T, line []byte, param string) {
		t.Helper()
		var reply struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int            `json:"code"`
				Data map[string]any `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &reply); err != nil {
			t.Fatalf("reply %q: %v", line, err)
		}
		if param == "" {
			if reply.Error != nil || len(reply.Result) == 0 {
				t.Fatalf("want a result, got %s", line)
			}
			return
		}
		if reply.Error == nil || reply.Error.Code != -32602 || reply.Error.Data["code"] != "too_long" || reply.Error.Data["param"] != param {
			t.Fatalf("want -32602 too_long on %s, got %s", param, line)
		}
		if strings.Contains(string(line), strings.Repeat("x", 100)) {
			t.Fatalf("the refused value is echoed: %s", line)
		}
	}
	for _, tc := range tests {
		t.Run("stdio/"+tc.name, func(t *testing.T) {
			in := rpc(0, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}) +
				"\n" + tc.body + "\n"
			var out testkit.Buffer
			if err := ServeStdio(context.Background(), newTestServer(testTools{}, RequestGuard(bounds)), strings.NewReader(in), &out, discardLogger()); err != nil {
				t.Fatal(err)
			}
			// Replies may come in any order: find the one that is not
			// initialize's (id 0).
			var reply []byte
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":0,`) {
					reply = []byte(line)
				}
			}
			check(t, reply, tc.param)
		})
	}
	h, err := NewHTTPHandler(newTestServer(testTools{}, RequestGuard(bounds)), HTTPConfig{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, tc := range tests {
		t.Run("http/"+tc.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+"/mcp", http.MethodPost, tc.body, hdr("MCP-Protocol-Version", "2025-06-18"))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			check(t, body, tc.param)
		})
	}
}

package transport

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzMCPBody posts arbitrary bodies to /mcp through the whole middleware
// stack: it must never panic, never stream, and answer only with the statuses
// the transport rules allow.
func FuzzMCPBody(f *testing.F) {
	for _, seed := range []string{
		rpc(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "f", "version": "1"}}),
		rpc(2, "tools/list", nil),
		rpc(3, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}),
		`[` + rpc(4, "tools/list", nil) + `,` + rpc(5, "ping", nil) + `]`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{`, `null`, `[]`, `{"jsonrpc":"1.0"}`, "\x00\xff",
	} {
		f.Add([]byte(seed), "2025-06-18")
		f.Add([]byte(seed), "")
	}
	h, err := NewHTTPHandler(newTestServer(testTools{}), HTTPConfig{RequireBearer: true, Logger: discardLogger(), MaxBodyBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	allowed := map[int]bool{200: true, 202: true, 400: true, 404: true, 405: true, 413: true, 415: true}
	f.Fuzz(func(t *testing.T, body []byte, version string) {
		req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer fuzz-token")
		if version != "" {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if !allowed[rec.Code] {
			t.Fatalf("status %d for body %q", rec.Code, body)
		}
		if ct := rec.Header().Get("Content-Type"); strings.Contains(ct, "event-stream") {
			t.Fatalf("streamed reply for body %q", body)
		}
		if rec.Header().Get("Mcp-Session-Id") != "" {
			t.Fatal("session id issued")
		}
	})
}

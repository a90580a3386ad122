package transport

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The benchmarks compare one tools/call of the same handler reached four
// ways, so the transport's overhead can be read as a ratio:
//
//	go test -run '^$' -bench ToolCall -benchmem ./internal/mcpserver/transport/

var benchCall = callBody(1, "echo", map[string]any{"text": "benchmark"})

// BenchmarkToolCallDirect calls the tool handler function itself.
func BenchmarkToolCallDirect(b *testing.B) {
	s := newTestServer(testTools{})
	handler := s.GetTool("echo").Handler
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "benchmark"}}}
	ctx := WithBearer(context.Background(), "bench-token")
	b.ReportAllocs()
	for b.Loop() {
		res, err := handler(ctx, req)
		if err != nil || res.IsError {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolCallMCPServer dispatches the raw JSON-RPC message through
// mcp-go's server without any transport.
func BenchmarkToolCallMCPServer(b *testing.B) {
	s := newTestServer(testTools{})
	ctx := WithBearer(context.Background(), "bench-token")
	msg := json.RawMessage(benchCall)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.HandleMessage(ctx, msg).(mcp.JSONRPCResponse); !ok {
			b.Fatal("not a result")
		}
	}
}

func benchHandler(b *testing.B, h http.Handler) {
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(benchCall))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer bench-token")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkToolCallHTTPStack runs the full /mcp middleware chain in memory
// (no sockets).
func BenchmarkToolCallHTTPStack(b *testing.B) {
	h, err := NewHTTPHandler(newTestServer(testTools{}), HTTPConfig{RequireBearer: true, Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	benchHandler(b, h)
}

// BenchmarkToolCallBareMCPGo is mcp-go's own ServeHTTP with the stateless,
// no-streaming options, in memory, for comparison with the stack above.
func BenchmarkToolCallBareMCPGo(b *testing.B) {
	benchHandler(b, server.NewStreamableHTTPServer(newTestServer(testTools{}),
		server.WithStateLess(true), server.WithDisableStreaming(true)))
}

// BenchmarkToolCallLoopback goes over a real loopback TCP connection with
// keep-alive.
func BenchmarkToolCallLoopback(b *testing.B) {
	h, err := NewHTTPHandler(newTestServer(testTools{}), HTTPConfig{RequireBearer: true, Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(benchCall))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer bench-token")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// benchLine is a tools/call line as a stdio client sends it.
var benchLine = []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"search","arguments":{"query":"hello world","limit":5,"stream":"messages"},"_meta":{"progressToken":3}}}`)

// BenchmarkPendingRequestID is the look every stdio line gets before it is
// dispatched (is it a request owed an answer, and its id).
func BenchmarkPendingRequestID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := pendingRequestID(benchLine); !ok {
			b.Fatal("not a request")
		}
	}
}

// BenchmarkReadGuarded is RequestGuard's read of a request's method and
// params.name / params.uri.
func BenchmarkReadGuarded(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := readGuarded(benchLine); !ok {
			b.Fatal("not read")
		}
	}
}

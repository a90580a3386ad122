package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const testInstructions = "Transport test server: echo repeats text, whoami reports the bearer, notify emits notifications mid-call."

// testRS is a stand-in resource server: it accepts one token and answers
// 401 invalid_token for any other, like the PDPP RS does.
type testRS struct {
	*httptest.Server
	goodToken string
	mu        sync.Mutex
	seen      []string // Authorization headers received, in order
}

func newTestRS(t testing.TB, goodToken string) *testRS {
	rs := &testRS{goodToken: goodToken}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.seen = append(rs.seen, r.Header.Get("Authorization"))
		rs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+rs.goodToken {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"type":"authentication_error","code":"context.active_false","message":"token is not active"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *testRS) authorizations() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.seen...)
}

// testTools configures the tools of the test MCP server.
type testTools struct {
	rsURL       string
	slowStarted chan struct{} // receives once per slow call when it starts
	slowFor     time.Duration
	// slowRelease, when set, replaces slowFor: a slow call finishes when it
	// is closed, so a test decides when a call in flight ends.
	slowRelease <-chan struct{}
}

// newTestServer builds a small but real mcp-go server with the options a
// product's server builder must use on the hosted endpoint.
func newTestServer(tt testTools, extra ...server.ServerOption) *server.MCPServer {
	opts := append([]server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithInstructions(testInstructions),
	}, extra...)
	s := server.NewMCPServer("transport-test", "0.0.1", opts...)
	readOnly := mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(true),
		DestructiveHint: mcp.ToBoolPtr(false),
		IdempotentHint:  mcp.ToBoolPtr(true),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	}
	tool := func(name, desc, schema string) mcp.Tool {
		return mcp.Tool{
			Name:           name,
			Title:          strings.ToUpper(name[:1]) + name[1:],
			Description:    desc,
			RawInputSchema: json.RawMessage(schema),
			Annotations:    readOnly,
		}
	}
	const textArg = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`
	const noArgs = `{"type":"object","properties":{}}`

	s.AddTool(tool("echo", "Repeat the given text.", textArg), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, err := req.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("echo: " + text), nil
	})
	s.AddTool(tool("whoami", "Report the bearer token this call carries.", noArgs), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token, ok := BearerFromContext(ctx)
		if !ok {
			token = "<none>"
		}
		return mcp.NewToolResultText("bearer=" + token + " authorization-header=" + req.Header.Get("Authorization")), nil
	})
	s.AddTool(tool("notify", "Send progress and log notifications while running.", noArgs), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := server.ServerFromContext(ctx)
		sent := 0
		for i := range 3 {
			if srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": "t", "progress": i + 1, "total": 3,
			}) == nil {
				sent++
			}
			if srv.SendNotificationToClient(ctx, "notifications/message", map[string]any{
				"level": "info", "data": fmt.Sprintf("step %d", i+1),
			}) == nil {
				sent++
			}
		}
		return mcp.NewToolResultText(fmt.Sprintf("notified %d", sent)), nil
	})
	s.AddTool(tool("rs_call", "Read the test resource server with the caller's token.", noArgs), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token, _ := BearerFromContext(ctx)
		rreq, err := http.NewRequestWithContext(ctx, http.MethodGet, tt.rsURL+"/v1/streams", nil)
		if err != nil {
			return nil, err
		}
		if token != "" {
			rreq.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(rreq)
		if err != nil {
			return mcp.NewToolResultError("resource server unreachable"), nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode == http.StatusUnauthorized {
			MarkTokenRejected(ctx)
		}
		if resp.StatusCode != http.StatusOK {
			return mcp.NewToolResultError(fmt.Sprintf("resource server answered %d: %s", resp.StatusCode, body)), nil
		}
		return mcp.NewToolResultText(string(body)), nil
	})
	s.AddTool(tool("slow", "Wait a moment, then answer.", noArgs), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tt.slowStarted != nil {
			tt.slowStarted <- struct{}{}
		}
		var timer <-chan time.Time
		if tt.slowRelease == nil {
			timer = time.After(tt.slowFor)
		}
		select {
		case <-timer:
			return mcp.NewToolResultText("slow done"), nil
		case <-tt.slowRelease:
			return mcp.NewToolResultText("slow done"), nil
		case <-ctx.Done():
			return mcp.NewToolResultError("slow cancelled"), nil
		}
	})
	s.AddResourceTemplate(mcp.NewResourceTemplate("note://{id}", "note", mcp.WithTemplateDescription("A test note.")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "note body"}}, nil
		})
	return s
}

// newStack builds the handler around a fresh test server and serves it on
// a loopback httptest server.
func newStack(t testing.TB, cfg HTTPConfig, tt testTools) *httptest.Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	h, err := NewHTTPHandler(newTestServer(tt), cfg)
	if err != nil {
		t.Fatalf("NewHTTPHandler: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// rpc builds a JSON-RPC request body.
func rpc(id any, method string, params any) string {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func initializeBody(id any, version string) string {
	return rpc(id, "initialize", map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "raw-test", "version": "1"},
	})
}

func callBody(id any, tool string, args map[string]any) string {
	if args == nil {
		args = map[string]any{}
	}
	return rpc(id, "tools/call", map[string]any{"name": tool, "arguments": args})
}

// post sends one raw request and returns the response with its body read.
func post(t testing.TB, url, method, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := rawPost(http.DefaultClient, url, method, body, header)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp, b
}

// rawPost is post without a testing.TB, for use in goroutines.
func rawPost(c *http.Client, url, method, body string, header http.Header) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, nil, err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// hdr builds a header from name/value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// rpcReply is a decoded JSON-RPC response.
type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decodeReply(t testing.TB, body []byte) rpcReply {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("reply is not one JSON-RPC object: %v\n%s", err, body)
	}
	if r.JSONRPC != "2.0" {
		t.Fatalf("reply is not JSON-RPC 2.0: %s", body)
	}
	return r
}

// toolText returns the text content and isError of a tools/call result.
func toolText(t testing.TB, result json.RawMessage) (string, bool) {
	t.Helper()
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("tools/call result: %v\n%s", err, result)
	}
	var sb strings.Builder
	for _, c := range r.Content {
		sb.WriteString(c.Text)
	}
	return sb.String(), r.IsError
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

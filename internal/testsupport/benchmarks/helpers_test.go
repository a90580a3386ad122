package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// callTimeout bounds every single call made by the tests and benchmarks.
const callTimeout = 30 * time.Second

var discard = slog.New(slog.DiscardHandler)

// startRS serves a demo RS with the fixed client token on a loopback port;
// wrap, when set, sits in front of its handler.
func startRS(tb testing.TB, wrap func(http.Handler) http.Handler) string {
	tb.Helper()
	d, err := demors.New(demors.Config{Tokens: map[string]string{demors.GrantClient: ClientToken}, Logger: discard})
	if err != nil {
		tb.Fatalf("demo RS: %v", err)
	}
	h := d.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(func() {
		srv.Close()
		_ = d.Close()
	})
	return srv.URL
}

func directClient(tb testing.TB, rsURL string) *rsclient.ClientWithResponses {
	tb.Helper()
	c, err := NewDirectClient(rsURL, ClientToken, NewHTTPClient())
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// newMCPServer builds the adapter's MCP server over the RS at rsURL, exactly
// as the command line does: token is the stdio credential or, for HTTP, the
// bearer of the current request.
func newMCPServer(tb testing.TB, rsURL string, token rs.TokenSource) *server.MCPServer {
	tb.Helper()
	return newMCPServerWith(tb, rsURL, token, pdpp.ServerOptions{})
}

func newMCPServerWith(tb testing.TB, rsURL string, token rs.TokenSource, opt pdpp.ServerOptions) *server.MCPServer {
	tb.Helper()
	c, err := rs.New(rsURL, token, rs.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return pdpp.NewServer(pdpp.New(pdpp.Config{RS: c, Token: token, Logger: discard}), opt)
}

func fixedToken(context.Context) (string, error) { return ClientToken, nil }

// requestBearer is the HTTP mode token source: the bearer the transport put
// in the request context.
func requestBearer(ctx context.Context) (string, error) {
	tok, ok := transport.BearerFromContext(ctx)
	if !ok || tok == "" {
		return "", errors.New("no bearer on this request")
	}
	return tok, nil
}

func initialize(tb testing.TB, c *client.Client) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "pdpp-bench", Version: "0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		tb.Fatalf("initialize: %v", err)
	}
}

// inProcessClient is an initialized mcp-go in-process client of the adapter
// over the RS at rsURL, reading with the fixed client token (stdio mode).
func inProcessClient(tb testing.TB, rsURL string) *client.Client {
	tb.Helper()
	c, _ := inProcess(tb, rsURL)
	return c
}

// inProcess returns the in-process client together with the server it talks to.
func inProcess(tb testing.TB, rsURL string) (*client.Client, *server.MCPServer) {
	tb.Helper()
	return connectInProcess(tb, newMCPServer(tb, rsURL, fixedToken))
}

// floorInProcess returns an initialized mcp-go in-process client of the
// floor server (NewFloorServer) over the RS at rsURL, with its own
// connection pool, together with that server.
func floorInProcess(tb testing.TB, rsURL string) (*client.Client, *server.MCPServer) {
	tb.Helper()
	return connectInProcess(tb, NewFloorServer(directClient(tb, rsURL)))
}

// connectInProcess returns an initialized mcp-go in-process client of s,
// closed when the test ends, together with s.
func connectInProcess(tb testing.TB, s *server.MCPServer) (*client.Client, *server.MCPServer) {
	tb.Helper()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	initialize(tb, c)
	return c, s
}

// toolCallMessage is the JSON-RPC tools/call request for call.
func toolCallMessage(tb testing.TB, call Call) json.RawMessage {
	tb.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": call.Tool, "arguments": call.Args}})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// serveMessage is the server half of a stdio tools/call: dispatch the raw
// request and encode the response. It returns the encoded response.
func serveMessage(s *server.MCPServer, msg json.RawMessage) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp := s.HandleMessage(ctx, msg)
	out, err := transport.EncodeMessage(resp)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(mcp.JSONRPCResponse)
	if !ok {
		return nil, fmt.Errorf("not a result: %.300s", out)
	}
	if res, ok := r.Result.(*mcp.CallToolResult); !ok || res.IsError {
		return nil, fmt.Errorf("tool error: %.300s", out)
	}
	return out, nil
}

// callOnce is serveMessage followed by one decode of the reply into a typed
// result (content, structuredContent as a generic map, isError), as a client
// that decodes each reply once would (the official Go SDK client or a bare
// JSON-RPC client). It is the "once" path, shown next to the mcp-go client
// path, whose client decodes every reply several times.
func callOnce(s *server.MCPServer, msg json.RawMessage) error {
	out, err := serveMessage(s, msg)
	if err != nil {
		return err
	}
	var reply struct {
		Result *struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent map[string]any `json:"structuredContent"`
			IsError           bool           `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &reply); err != nil {
		return err
	}
	if reply.Result == nil || reply.Result.IsError || len(reply.Result.Content) == 0 {
		return fmt.Errorf("not a tool result: %.300s", out)
	}
	return nil
}

// postMessage is a bare HTTP client of /mcp: it posts the raw request and
// decodes only isError from the JSON reply. It speaks the 2025-11-25
// revision, which needs no per-request _meta.
func postMessage(hc *http.Client, mcpURL string, msg json.RawMessage) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+ClientToken)
	req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20251125)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var out struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || out.Result == nil || out.Result.IsError {
		return nil, fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, body)
	}
	return body, nil
}

// startAdapterHTTP serves the adapter behind the full /mcp transport stack on
// a loopback port and returns the /mcp URL.
func startAdapterHTTP(tb testing.TB, rsURL string) string {
	tb.Helper()
	h, err := transport.NewHTTPHandler(newMCPServer(tb, rsURL, requestBearer), transport.HTTPConfig{RequireBearer: true, Logger: discard})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// httpClient is an initialized mcp-go Streamable HTTP client of mcpURL with
// its own connection pool, sending the client token as bearer.
func httpClient(tb testing.TB, mcpURL string) *client.Client {
	tb.Helper()
	c, err := client.NewStreamableHttpClient(mcpURL,
		mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + ClientToken}),
		mcptransport.WithHTTPBasicClient(NewHTTPClient()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	initialize(tb, c)
	return c
}

// callTool makes one tools/call and fails on a transport error or an isError
// result.
func callTool(c *client.Client, call Call) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = call.Tool
	req.Params.Arguments = call.Args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", call.Name, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("%s: tool error: %s", call.Name, resultText(res))
	}
	return res, nil
}

// callDirect makes the call's RS request directly and returns the decoded
// model and the body size.
func callDirect(c *rsclient.ClientWithResponses, call Call) (any, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	v, body, err := call.Direct(ctx, c)
	if err != nil {
		return nil, 0, fmt.Errorf("%s direct: %w", call.Name, err)
	}
	return v, len(body), nil
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// structured decodes a result's structuredContent into out.
func structured(res *mcp.CallToolResult, out any) error {
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func callNamed(tb testing.TB, name string) Call {
	tb.Helper()
	for _, c := range Workload() {
		if c.Name == name {
			return c
		}
	}
	tb.Fatalf("no workload call %q", name)
	return Call{}
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// startHTTP serves the real PDPP server over the hosted transport on loopback
// against provider, and returns the /mcp URL.
func startHTTP(t *testing.T, provider string) string {
	t.Helper()
	h := httpFlagsFor(provider)
	return startHTTPWith(t, &h)
}

// httpFlagsFor are the flags startHTTP serves with.
func httpFlagsFor(provider string) httpFlags {
	return httpFlags{common: common{providerURL: provider, serverName: "pdpp", toolsets: "read", rsTimeout: 10 * time.Second}, HTTPFlags: cmdkit.HTTPFlags{HTTPConfig: transport.HTTPConfig{Listen: "127.0.0.1:0", MaxBodyBytes: 1 << 20}}}
}

// toolsetSize is the number of catalog tools in one toolset.
func toolsetSize(set string) int {
	n := 0
	for _, tool := range mcptools.Tools() {
		if mcptools.Toolset(tool.Name) == set {
			n++
		}
	}
	return n
}

// startHTTPWith serves with the given flags and returns the /mcp URL.
func startHTTPWith(t *testing.T, h *httpFlags) string {
	t.Helper()
	addr, _ := serveForTest(t, context.Background(), slog.New(slog.DiscardHandler), h)
	return "http://" + addr.String() + "/mcp"
}

// serveForTest runs serveHTTP with h until the test ends (or ctx does) and
// returns its address and that of its metrics listener (nil when off).
func serveForTest(t *testing.T, ctx context.Context, log *slog.Logger, h *httpFlags) (addr, metricsAddr net.Addr) {
	t.Helper()
	return testkit.Serve(t, ctx, func(ctx context.Context, onListen, onMetrics func(net.Addr)) error {
		return serveHTTP(ctx, log, h, onListen, onMetrics)
	})
}

func TestHTTPJourneyMarkClient(t *testing.T) {
	mcpURL := startHTTP(t, demoRS(t))
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := runJourney(ctx, &out, mcpURL, fixedTokens["client"]); err != nil {
		t.Fatalf("journey: %v\n%s", err, out.String())
	}
	for _, want := range []string{"<mark>zephyrmarker</mark>", "$ read_record_field", "match at", "$ fetch"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("journey output lacks %q:\n%s", want, out.String())
		}
	}
}

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestHTTPJourneyOfficialSDK runs initialize -> tools/list -> search -> fetch
// with the official go-sdk client, which also validates every
// structuredContent against the tool's outputSchema.
func TestHTTPJourneyOfficialSDK(t *testing.T) {
	mcpURL := startHTTP(t, demoRS(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := sdk.NewClient(&sdk.Implementation{Name: "sdk-journey", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: &http.Client{Transport: bearerRT{fixedTokens["client"]}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if cs.InitializeResult().Instructions == "" {
		t.Fatal("no instructions")
	}
	tools, err := cs.ListTools(ctx, nil)
	if want := toolsetSize("read"); err != nil || len(tools.Tools) != want {
		t.Fatalf("tools/list: %v (%d tools, want the %d of the read toolset)", err, len(tools.Tools), want)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"q": "zephyrmarker", "limit": 3}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	var sc struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &sc) != nil || len(sc.Results) == 0 {
		t.Fatalf("search structured output: %s", b)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if !strings.HasPrefix(text, "first_fetch_id="+sc.Results[0].ID+"\n") {
		t.Fatalf("first line must carry results[0].id:\n%s", text)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "fetch", Arguments: map[string]any{"id": sc.Results[0].ID}})
	if err != nil || res.IsError {
		t.Fatalf("fetch: %v %+v", err, res)
	}
	if !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "id="+sc.Results[0].ID) {
		t.Fatalf("fetch text: %s", res.Content[0].(*sdk.TextContent).Text)
	}
	// A missing bearer is refused at the transport with the metadata pointer.
	resp, err := http.Post(mcpURL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "/.well-known/oauth-protected-resource/mcp") {
		t.Fatalf("no bearer: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

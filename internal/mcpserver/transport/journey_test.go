package transport

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// journeyCase is one client run: which revision the client asks for, which
// revisions the server offers, and which one must be negotiated.
type journeyCase struct {
	name           string
	clientVersion  string // "" lets the client pick (it probes 2026-07-28 first)
	serverVersions []string
	wantVersion    string
}

var journeyCases = []journeyCase{
	{"client default", "", nil, "2026-07-28"},
	{"pinned 2025-11-25", "2025-11-25", nil, "2025-11-25"},
	{"pinned 2025-06-18", "2025-06-18", nil, "2025-06-18"},
	{"pinned 2025-03-26", "2025-03-26", nil, "2025-03-26"},
	{"falls back when 2026-07-28 is off", "", []string{"2025-11-25", "2025-06-18", "2025-03-26"}, "2025-11-25"},
}

const journeyToken = "journey-token-42"

func TestJourneyMarkGoClient(t *testing.T) {
	for _, tc := range journeyCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newStack(t, HTTPConfig{RequireBearer: true, ProtocolVersions: tc.serverVersions}, testTools{})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			tr, err := transport.NewStreamableHTTP(srv.URL+"/mcp",
				transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + journeyToken}))
			if err != nil {
				t.Fatal(err)
			}
			var opts []client.ClientOption
			if tc.clientVersion != "" {
				opts = append(opts, client.WithProtocolVersion(tc.clientVersion))
			}
			c := client.NewClient(tr, opts...)
			defer c.Close()
			notified := make(chan string, 16)
			c.OnNotification(func(n mcp.JSONRPCNotification) { notified <- n.Method })
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
				ClientInfo: mcp.Implementation{Name: "journey-mcp-go", Version: "1"},
			}})
			if err != nil {
				t.Fatalf("initialize: %v", err)
			}
			if init.ProtocolVersion != tc.wantVersion {
				t.Fatalf("negotiated %q, want %q", init.ProtocolVersion, tc.wantVersion)
			}
			if init.Capabilities.Tools == nil || init.Capabilities.Resources == nil || init.Capabilities.Prompts != nil ||
				init.Capabilities.Logging != nil || init.Capabilities.Completions != nil || init.Instructions != testInstructions {
				t.Fatalf("initialize result %+v", init)
			}
			if id := c.GetSessionId(); id != "" {
				t.Fatalf("client holds a session id %q", id)
			}

			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if len(tools.Tools) != 5 {
				t.Fatalf("tools/list returned %d tools", len(tools.Tools))
			}

			calls := []struct {
				tool string
				args map[string]any
				want string
			}{
				{"echo", map[string]any{"text": "hello"}, "echo: hello"},
				{"whoami", nil, "bearer=" + journeyToken + " authorization-header="},
				{"notify", nil, "notified 6"},
			}
			for _, call := range calls {
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: call.tool, Arguments: call.args}})
				if err != nil {
					t.Fatalf("tools/call %s: %v", call.tool, err)
				}
				if res.IsError || len(res.Content) != 1 {
					t.Fatalf("tools/call %s: %+v", call.tool, res)
				}
				if text := res.Content[0].(mcp.TextContent).Text; text != call.want {
					t.Fatalf("tools/call %s: %q, want %q", call.tool, text, call.want)
				}
			}
			select {
			case m := <-notified:
				t.Fatalf("a notification reached the client on a JSON-only endpoint: %s", m)
			default:
			}

			rr, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "note://1"}})
			if err != nil || len(rr.Contents) != 1 {
				t.Fatalf("resources/read: %v %+v", err, rr)
			}
		})
	}
}

// bearerTransport adds a fixed Authorization header to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func TestJourneyOfficialSDKClient(t *testing.T) {
	for _, tc := range journeyCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newStack(t, HTTPConfig{RequireBearer: true, ProtocolVersions: tc.serverVersions}, testTools{})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			cl := sdk.NewClient(&sdk.Implementation{Name: "journey-go-sdk", Version: "1"}, nil)
			httpClient := &http.Client{Transport: bearerTransport{token: journeyToken, base: http.DefaultTransport}}
			cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: httpClient},
				&sdk.ClientSessionOptions{ProtocolVersion: tc.clientVersion})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			init := cs.InitializeResult()
			if init.ProtocolVersion != tc.wantVersion {
				t.Fatalf("negotiated %q, want %q", init.ProtocolVersion, tc.wantVersion)
			}
			caps := init.Capabilities
			if caps.Tools == nil || caps.Resources == nil || caps.Prompts != nil || caps.Logging != nil || caps.Completions != nil {
				t.Fatalf("capabilities %+v", caps)
			}
			if init.Instructions != testInstructions {
				t.Fatalf("instructions %q", init.Instructions)
			}
			if id := cs.ID(); id != "" {
				t.Fatalf("session id %q", id)
			}

			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			names := make([]string, 0, len(tools.Tools))
			for _, tl := range tools.Tools {
				if tl.Title == "" || tl.Description == "" {
					t.Errorf("tool %s lacks title or description", tl.Name)
				}
				names = append(names, tl.Name)
			}
			if got := strings.Join(names, ","); !strings.Contains(got, "echo") || len(names) != 5 {
				t.Fatalf("tools %s", got)
			}

			calls := []struct {
				tool string
				args map[string]any
				want string
			}{
				{"echo", map[string]any{"text": "hello"}, "echo: hello"},
				{"whoami", map[string]any{}, "bearer=" + journeyToken + " authorization-header="},
				{"notify", map[string]any{}, "notified 6"},
			}
			for _, call := range calls {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: call.tool, Arguments: call.args})
				if err != nil {
					t.Fatalf("tools/call %s: %v", call.tool, err)
				}
				if res.IsError || len(res.Content) != 1 {
					t.Fatalf("tools/call %s: %+v", call.tool, res)
				}
				if text := res.Content[0].(*sdk.TextContent).Text; text != call.want {
					t.Fatalf("tools/call %s: %q, want %q", call.tool, text, call.want)
				}
			}
			rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "note://1"})
			if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "note body" {
				t.Fatalf("resources/read: %v %+v", err, rr)
			}
		})
	}
}

package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
)

// interopVersions are the protocol revisions the official Go SDK client is
// run at, over each transport.
var interopVersions = []string{"2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}

// connectStdio serves the PDPP server over stdio pipes against provider and
// connects the official Go SDK client to it at version.
func connectStdio(t *testing.T, ctx context.Context, provider, version string) *sdk.ClientSession {
	t.Helper()
	return connectStdioAs(t, ctx, provider, version, fixedTokens["client"])
}

// connectStdioAs is connectStdio with the cached credential's token.
func connectStdioAs(t *testing.T, ctx context.Context, provider, version, bearer string) *sdk.ClientSession {
	t.Helper()
	c := common{providerURL: provider, serverName: "pdpp", toolsets: strings.Join(mcptools.Toolsets(), ","), rsTimeout: 10 * time.Second,
		allowPrivateWebhooks: true} // the test's webhook receiver is on loopback
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	token := func(context.Context) (string, error) { return bearer, nil }
	s, _, err := c.buildServer(log, token)
	if err != nil {
		t.Fatal(err)
	}
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- transport.ServeStdio(sctx, s, serverIn, serverOut, log) }()
	t.Cleanup(func() {
		cancel()
		_ = clientOut.Close()
		_ = serverOut.Close()
		<-done
	})
	cl := sdk.NewClient(&sdk.Implementation{Name: "interop-go-sdk", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("stdio connect at %s: %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// connectHTTP serves the PDPP server over the hosted transport against
// provider and connects the official Go SDK client to it at version.
func connectHTTP(t *testing.T, ctx context.Context, provider, version string) *sdk.ClientSession {
	t.Helper()
	h := httpFlags{
		// The test's webhook receiver is on loopback, as in the demo.
		common: common{providerURL: provider, serverName: "pdpp", toolsets: strings.Join(mcptools.Toolsets(), ","), rsTimeout: 10 * time.Second,
			allowPrivateWebhooks: true},
		HTTPFlags: cmdkit.HTTPFlags{HTTPConfig: transport.HTTPConfig{Listen: "127.0.0.1:0", MaxBodyBytes: 1 << 20}},
	}
	mcpURL := startHTTPWith(t, &h)
	cl := sdk.NewClient(&sdk.Implementation{Name: "interop-go-sdk", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: &http.Client{Transport: bearerRT{fixedTokens["client"]}}},
		&sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("http connect at %s: %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestInteropOfficialSDK runs the official Go SDK client over stdio and HTTP
// at every protocol revision we serve: ping, resources/templates/list, every
// tool with valid arguments against the demo RS (each structuredContent
// validated against the tool's outputSchema from tools/list), and
// resources/read of every resource kind the tools hand out.
func TestInteropOfficialSDK(t *testing.T) {
	provider := demoRS(t)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hook.Close)
	transports := []struct {
		name    string
		connect func(*testing.T, context.Context, string, string) *sdk.ClientSession
	}{{"stdio", connectStdio}, {"http", connectHTTP}}
	for _, tr := range transports {
		for _, version := range interopVersions {
			t.Run(tr.name+"/"+version, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cs := tr.connect(t, ctx, provider, version)
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Fatalf("negotiated %q, want %q", got, version)
				}
				runInterop(t, ctx, cs, hook.URL+"/hook")
			})
		}
	}
}

func runInterop(t *testing.T, ctx context.Context, cs *sdk.ClientSession, callback string) {
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatalf("ping: %v", err)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	var uriTemplates []string
	for _, rt := range templates.ResourceTemplates {
		uriTemplates = append(uriTemplates, rt.URITemplate)
	}
	sort.Strings(uriTemplates)
	if got := strings.Join(uriTemplates, " "); got != "pdpp://blob/{blob_id} pdpp://field-window/{handle} pdpp://record/{+handle} pdpp://stream/{name}" {
		t.Errorf("resource templates: %s", got)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, tl := range tools.Tools {
		raw, err := json.Marshal(tl.OutputSchema)
		if err != nil || tl.OutputSchema == nil {
			t.Fatalf("tool %s has no outputSchema", tl.Name)
		}
		schemas[tl.Name] = compileOutputSchema(t, tl.Name, raw)
	}
	called := map[string]bool{}
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		called[name] = true
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if res.IsError {
			t.Fatalf("%s %v: error result %s", name, args, raw)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err == nil {
			err = schemas[name].Validate(inst)
		}
		if err != nil {
			t.Errorf("%s: structuredContent does not validate against its outputSchema: %v", name, err)
		}
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if res.Meta != nil {
			m["_meta"] = map[string]any(res.Meta)
		}
		return m
	}

	call("schema", map[string]any{})
	call("schema", map[string]any{"stream": "transcripts"})
	found := call("search", map[string]any{"q": "zephyrmarker", "limit": 3})
	results, _ := found["results"].([]any)
	if len(results) == 0 {
		t.Fatalf("search found nothing")
	}
	if hit, _ := results[0].(map[string]any)["id"].(string); hit == "" {
		t.Fatalf("search hit without an id: %v", results[0])
	}
	const conn = "cin_demo_loom_main"
	const id = conn + "/transcripts:tr-5"
	call("query_records", map[string]any{"stream": "transcripts", "connection_id": conn, "limit": 2})
	call("aggregate", map[string]any{"stream": "transcripts", "metric": "count", "group_by": "language"})
	call("fetch", map[string]any{"id": id})
	window := call("read_record_field", map[string]any{"id": id, "field_path": "text", "limit_chars": 500})
	windowURI, _ := window["_meta"].(map[string]any)["pdpp/field_window_uri"].(string)

	call("discover_event_subscription_capabilities", map[string]any{})
	created := call("create_event_subscription", map[string]any{"callback_url": callback, "streams": []string{"transcripts"}})
	sub, _ := created["subscription"].(map[string]any)
	subID, _ := sub["subscription_id"].(string)
	if subID == "" {
		t.Fatalf("create_event_subscription gave no id: %v", created)
	}
	call("list_event_subscriptions", map[string]any{})
	call("get_event_subscription", map[string]any{"subscription_id": subID})
	call("update_event_subscription", map[string]any{"subscription_id": subID, "enabled": true})
	call("send_test_event", map[string]any{"subscription_id": subID})
	call("delete_event_subscription", map[string]any{"subscription_id": subID})
	for _, tl := range tools.Tools {
		if !called[tl.Name] {
			t.Errorf("tool %s was not called", tl.Name)
		}
	}

	// The record URI is a result id pasted after the scheme; the last one
	// is the reference adapter's field-window handle.
	reference := "pdpp://field-window/" + base64.RawURLEncoding.EncodeToString([]byte(
		`{"v":1,"kind":"field-window","connection_id":"`+conn+`","stream":"transcripts","record_id":"tr-5","field_path":"text","offset_chars":0,"limit_chars":500}`))
	uris := []string{"pdpp://stream/transcripts", "pdpp://record/" + id, windowURI, reference}
	for _, uri := range uris {
		rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text == "" {
			t.Errorf("resources/read %s: %v %+v", uri, err, rr)
		}
	}
}

// compileOutputSchema compiles one tool's outputSchema as served.
func compileOutputSchema(t *testing.T, name string, raw []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s outputSchema: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatalf("%s outputSchema: %v", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s outputSchema does not compile: %v", name, err)
	}
	return s
}

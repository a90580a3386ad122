package pdpp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// TestOfficialSDKClientReadsBothDetails drives the real server over stdio
// (the product's stdio transport on pipes) with the official Go SDK client and
// checks every read tool at its largest limit, and every events tool on a
// subscription it creates, in compact and full detail where the tool takes
// one: a successful result whose structuredContent validates against the
// outputSchema the client listed.
func TestOfficialSDKClientReadsBothDetails(t *testing.T) {
	demo := newDemoHarness(t, tokClient)
	top := longestTranscripts(t, demo)[0]
	topID := top.conn + "/transcripts:" + top.id

	source := func(context.Context) (string, error) { return tokClient, nil }
	rsClient, err := rs.New(demo.rsURL, source, rs.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Its webhook receiver is on loopback, as in the demo.
	srv := pdpp.NewServer(pdpp.New(pdpp.Config{RS: rsClient, Token: source, AllowPrivateWebhooks: true}), pdpp.ServerOptions{})
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = transport.ServeStdio(ctx, srv, serverIn, serverOut, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() {
		cancel()
		_ = clientOut.Close()
		_ = serverOut.Close()
		<-done
	})

	cl := sdk.NewClient(&sdk.Implementation{Name: "pdpp-detail-test", Version: "0"}, nil)
	cs, err := cl.Connect(ctx, &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, tool := range list.Tools {
		raw, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), `"type":[`) {
			t.Errorf("%s outputSchema spells a type as an array: %s", tool.Name, raw)
		}
		schemas[tool.Name] = compileSchema(t, tool.Name, raw)
	}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"schema", map[string]any{}},
		{"aggregate", map[string]any{"stream": "transcripts", "metric": "count", "group_by": "language", "limit": 100}},
		{"query_records", map[string]any{"stream": "transcripts", "limit": 100}},
		{"search", map[string]any{"q": "review", "limit": 100}},
		{"fetch", map[string]any{"id": topID}},
		{"read_record_field", map[string]any{"id": topID, "field_path": "text", "limit_chars": 16384}},
	}
	created, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "create_event_subscription", Arguments: map[string]any{"callback_url": "http://127.0.0.1:1/hook"}})
	if err != nil || created.IsError {
		t.Fatalf("create_event_subscription: %v %v", err, created)
	}
	sub, _ := created.StructuredContent.(map[string]any)["subscription"].(map[string]any)
	subID, _ := sub["subscription_id"].(string)
	events := []struct {
		tool string
		args map[string]any
	}{
		{"discover_event_subscription_capabilities", map[string]any{}},
		{"list_event_subscriptions", map[string]any{}},
		{"get_event_subscription", map[string]any{"subscription_id": subID}},
		{"send_test_event", map[string]any{"subscription_id": subID}},
		{"update_event_subscription", map[string]any{"subscription_id": subID, "enabled": false}},
		{"delete_event_subscription", map[string]any{"subscription_id": subID}},
	}
	calls = append(calls, events...)
	withDetail := map[string]bool{"query_records": true, "search": true, "fetch": true, "read_record_field": true,
		"discover_event_subscription_capabilities": true, "list_event_subscriptions": true, "get_event_subscription": true}
	for _, c := range calls {
		details := []string{""}
		if withDetail[c.tool] {
			details = []string{"compact", "full"}
		}
		for _, d := range details {
			args := c.args
			if d != "" {
				args = withArg(c.args, "detail", d)
			}
			t.Run(c.tool+" "+d, func(t *testing.T) {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: args})
				if err != nil {
					t.Fatal(err)
				}
				if res.IsError {
					t.Fatalf("tool error: %v", res.Content)
				}
				raw, err := json.Marshal(res.StructuredContent)
				if err != nil {
					t.Fatal(err)
				}
				if err := validateJSON(schemas[c.tool], string(raw)); err != nil {
					t.Errorf("structuredContent does not validate against the listed outputSchema: %v", err)
				}
				if len(res.Content) == 0 {
					t.Errorf("no content[]")
				}
			})
		}
	}
}

package mcpkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

var update = flag.Bool("update", false, "rewrite the tools/list golden file from the live server")

const goldenPath = "../../../gen/mcptools/tools_list.golden.json"

// recorder is a Handlers implementation that remembers each call and
// answers with a small structured result.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

type call struct {
	tool string
	args any
}

func (r *recorder) record(tool string, args any) (*mcp.CallToolResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{tool, args})
	return mcp.NewToolResultStructured(map[string]any{"data": map[string]any{"tool": tool}}, "ok "+tool), nil
}

func (r *recorder) taken() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) Schema(_ context.Context, a mcptools.SchemaArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolSchema, a)
}
func (r *recorder) QueryRecords(_ context.Context, a mcptools.QueryRecordsArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolQueryRecords, a)
}
func (r *recorder) Aggregate(_ context.Context, a mcptools.AggregateArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolAggregate, a)
}
func (r *recorder) Search(_ context.Context, a mcptools.SearchArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolSearch, a)
}
func (r *recorder) Fetch(_ context.Context, a mcptools.FetchArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolFetch, a)
}
func (r *recorder) ReadRecordField(_ context.Context, a mcptools.ReadRecordFieldArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolReadRecordField, a)
}
func (r *recorder) DiscoverEventSubscriptionCapabilities(_ context.Context, a mcptools.DiscoverEventSubscriptionCapabilitiesArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolDiscoverEventSubscriptionCapabilities, a)
}
func (r *recorder) CreateEventSubscription(_ context.Context, a mcptools.CreateEventSubscriptionArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolCreateEventSubscription, a)
}
func (r *recorder) ListEventSubscriptions(_ context.Context, a mcptools.ListEventSubscriptionsArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolListEventSubscriptions, a)
}
func (r *recorder) GetEventSubscription(_ context.Context, a mcptools.GetEventSubscriptionArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolGetEventSubscription, a)
}
func (r *recorder) UpdateEventSubscription(_ context.Context, a mcptools.UpdateEventSubscriptionArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolUpdateEventSubscription, a)
}
func (r *recorder) DeleteEventSubscription(_ context.Context, a mcptools.DeleteEventSubscriptionArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolDeleteEventSubscription, a)
}
func (r *recorder) SendTestEvent(_ context.Context, a mcptools.SendTestEventArgs) (*mcp.CallToolResult, error) {
	return r.record(mcptools.ToolSendTestEvent, a)
}

// resources answers every resource template with the template name.
type resources struct{}

func (resources) read(name string, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: `{"template":"` + name + `"}`}}, nil
}
func (r resources) ReadStreamResource(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return r.read("stream", req)
}
func (r resources) ReadRecordResource(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return r.read("record", req)
}
func (r resources) ReadFieldWindowResource(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return r.read("field_window", req)
}

func (r resources) ReadBlobResource(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return r.read("blob", req)
}

// connect registers the generated catalog on a real mcp-go server and
// returns an initialized in-process client.
func connect(t *testing.T, h mcptools.Handlers, opt mcpkit.RegisterOptions) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	s := server.NewMCPServer(mcptools.ServerName, "test",
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithInstructions(mcptools.Instructions))
	mcptools.Register(s, h, resources{}, opt)
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "catalog-test", Version: "1"},
	}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c, init
}

// rawRequest sends one JSON-RPC request through the client's transport and
// returns the raw result bytes exactly as the server serialized them.
func rawRequest(t *testing.T, c *client.Client, method string, params any) json.RawMessage {
	t.Helper()
	resp, err := c.GetTransport().SendRequest(context.Background(), transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1000)), Method: method, Params: params,
	})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if resp.Error != nil {
		t.Fatalf("%s: JSON-RPC error %d %s", method, resp.Error.Code, resp.Error.Message)
	}
	return resp.Result
}

// TestToolsListGolden compares the served tools/list with the golden file
// that mcpgen writes; -update rewrites the golden from the server.
func TestToolsListGolden(t *testing.T) {
	c, _ := connect(t, &recorder{}, mcpkit.RegisterOptions{})
	raw := rawRequest(t, c, "tools/list", map[string]any{})
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.WriteFile(goldenPath, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("read golden (run go generate ./...): %v", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Fatalf("served tools/list differs from %s:\n%s", goldenPath, firstDiff(pretty.String(), string(want)))
	}
	for _, kw := range []string{`"$ref"`, `"$defs"`, `"$schema"`, `"additionalProperties"`} {
		if bytes.Contains(raw, []byte(kw)) {
			t.Errorf("served tools/list contains %s", kw)
		}
	}

	listed, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range mcptools.Tools() {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if len(listed.Tools) != len(names) {
		t.Fatalf("listed %d tools, catalog has %d", len(listed.Tools), len(names))
	}
	for i, tool := range listed.Tools {
		t.Run(tool.Name, func(t *testing.T) {
			if tool.Name != names[i] {
				t.Fatalf("tool %d is %q, want %q", i, tool.Name, names[i])
			}
			if tool.Title == "" || tool.Description == "" {
				t.Errorf("title %q / description %q missing", tool.Title, tool.Description)
			}
			a := tool.Annotations
			if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
				t.Errorf("a hint is unset: %+v", a)
			}
			if mcptools.Toolset(tool.Name) == "" {
				t.Errorf("no toolset")
			}
		})
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ":\n  served: " + g[i] + "\n  golden: " + w[i]
		}
	}
	return "lengths differ: served " + strconv.Itoa(len(g)) + " lines, golden " + strconv.Itoa(len(w))
}

func TestInitializeInstructions(t *testing.T) {
	_, init := connect(t, &recorder{}, mcpkit.RegisterOptions{})
	if init.Instructions != mcptools.Instructions {
		t.Fatalf("initialize instructions differ from the generated constant")
	}
	head := string([]rune(init.Instructions)[:512])
	for _, phrase := range []string{"schema", "connection_id", "filter", "cursor", "limit"} {
		if !strings.Contains(head, phrase) {
			t.Errorf("first 512 characters do not mention %q", phrase)
		}
	}
	if strings.Contains(strings.ToLower(init.Instructions), "owner token") {
		t.Errorf("instructions mention an owner token as something to use")
	}
	if init.ServerInfo.Name != mcptools.ServerName {
		t.Errorf("server name %q, want %q", init.ServerInfo.Name, mcptools.ServerName)
	}
}

// TestStrictArguments calls tools through the client and checks that bad
// arguments come back as adapter errors without reaching the handler, and
// that good ones arrive typed.
func TestStrictArguments(t *testing.T) {
	refused := []struct {
		name      string
		tool      string
		args      map[string]any
		code      string
		param     string
		inMessage string
	}{
		{"unknown argument", "query_records", map[string]any{"stream": "s", "page_size": 5}, mcpkit.CodeUnknownArgument, "page_size", "valid arguments: stream, limit"},
		{"name differs in case", "query_records", map[string]any{"Stream": "s"}, mcpkit.CodeUnknownArgument, "Stream", `unknown argument "Stream"`},
		{"string for integer", "query_records", map[string]any{"stream": "s", "limit": "10"}, mcpkit.CodeInvalidType, "limit", "limit must be an integer; got a string"},
		{"fraction for integer", "search", map[string]any{"q": "x", "limit": 2.5}, mcpkit.CodeInvalidType, "limit", "got 2.5"},
		{"string for array", "query_records", map[string]any{"stream": "s", "fields": "id,title"}, mcpkit.CodeInvalidType, "fields", "an array of strings"},
		{"limit over maximum", "query_records", map[string]any{"stream": "s", "limit": 101}, mcpkit.CodeOutOfRange, "limit", "between 1 and 100; got 101"},
		{"limit_chars over maximum", "read_record_field", map[string]any{"field_path": "text", "limit_chars": 16385}, mcpkit.CodeOutOfRange, "limit_chars", "16384"},
		{"missing required", "search", map[string]any{"limit": 3}, mcpkit.CodeMissingArgument, "q", "q is required"},
		{"empty required", "fetch", map[string]any{"id": ""}, mcpkit.CodeMissingArgument, "id", "id is required"},
		{"enum", "aggregate", map[string]any{"stream": "s", "metric": "avg"}, mcpkit.CodeInvalidEnum, "metric", "count, sum, min, max, count_distinct"},
		{"filter as string", "query_records", map[string]any{"stream": "s", "filter": "language=en"}, mcpkit.CodeInvalidType, "filter", "filter must be a JSON object; got a string"},
		{"expand_limit as array", "fetch", map[string]any{"id": "c/s:1", "expand_limit": []any{1}}, mcpkit.CodeInvalidType, "expand_limit", "got an array"},
		// Catalog formats: every path-bearing argument, refused by the
		// generated Validate before any handler runs.
		{"stream dot-dot", "query_records", map[string]any{"stream": ".."}, mcpkit.CodeInvalidFormat, "stream", `stream ".." is "." or ".." (path traversal); allowed: letters, digits`},
		{"stream dot", "query_records", map[string]any{"stream": "."}, mcpkit.CodeInvalidFormat, "stream", `"." or ".."`},
		{"stream slash", "query_records", map[string]any{"stream": "a/b"}, mcpkit.CodeInvalidFormat, "stream", `contains "/" or "\"`},
		{"stream NUL", "query_records", map[string]any{"stream": "a\x00"}, mcpkit.CodeInvalidFormat, "stream", "control character"},
		{"stream too long", "query_records", map[string]any{"stream": strings.Repeat("s", 5000)}, mcpkit.CodeInvalidFormat, "stream", "5000 bytes, over the 128-byte limit"},
		{"stream encoded traversal", "schema", map[string]any{"stream": "%2e%2e"}, mcpkit.CodeInvalidFormat, "stream", "once percent-decoded"},
		{"aggregate stream dot-dot", "aggregate", map[string]any{"stream": "..", "metric": "count"}, mcpkit.CodeInvalidFormat, "stream", "path traversal"},
		{"connection_id slash", "search", map[string]any{"q": "x", "connection_id": "../c"}, mcpkit.CodeInvalidFormat, "connection_id", "allowed:"},
		{"streams item", "search", map[string]any{"q": "x", "streams": []any{"notes", ".."}}, mcpkit.CodeInvalidFormat, "streams", "path traversal"},
		{"fields item", "query_records", map[string]any{"stream": "s", "fields": []any{"id", "a b"}}, mcpkit.CodeInvalidFormat, "fields", "a field name"},
		{"expand item", "fetch", map[string]any{"id": "c/s:1", "expand": []any{"../x"}}, mcpkit.CodeInvalidFormat, "expand", "a field name"},
		{"fetch id NUL", "fetch", map[string]any{"id": "s:1\x00"}, mcpkit.CodeInvalidFormat, "id", "control character"},
		{"record_id dot-dot", "read_record_field", map[string]any{"stream": "s", "record_id": "..", "field_path": "text"}, mcpkit.CodeInvalidFormat, "record_id", "path traversal"},
		{"record_id trailing space", "read_record_field", map[string]any{"stream": "s", "record_id": "r ", "field_path": "text"}, mcpkit.CodeInvalidFormat, "record_id", "not in the allowed form"},
		{"field_path traversal", "read_record_field", map[string]any{"id": "c/s:1", "field_path": "../text"}, mcpkit.CodeInvalidFormat, "field_path", "a field name"},
		{"q too long", "read_record_field", map[string]any{"id": "c/s:1", "field_path": "text", "q": strings.Repeat("q", 513)}, mcpkit.CodeInvalidFormat, "q", "over the 512-byte limit"},
		{"before_chars over maximum", "read_record_field", map[string]any{"id": "c/s:1", "field_path": "text", "q": "x", "before_chars": 16385}, mcpkit.CodeOutOfRange, "before_chars", "16384"},
		{"subscription_id slash", "get_event_subscription", map[string]any{"subscription_id": "sub_1/test-event"}, mcpkit.CodeInvalidFormat, "subscription_id", "allowed: an id as create or list return it"},
		{"subscription streams NUL", "create_event_subscription", map[string]any{"callback_url": "https://h.example/x", "streams": []any{"\x00"}}, mcpkit.CodeInvalidFormat, "streams", "control character"},
	}
	h := &recorder{}
	c, _ := connect(t, h, mcpkit.RegisterOptions{})
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tc.tool, Arguments: tc.args}})
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			checkAdapterError(t, res, tc.code, tc.param, tc.inMessage)
		})
	}
	if calls := h.taken(); len(calls) != 0 {
		t.Fatalf("handler was called for refused arguments: %+v", calls)
	}

	accepted := []struct {
		name  string
		tool  string
		args  map[string]any
		check func(t *testing.T, got any)
	}{
		{"typed query", "query_records", map[string]any{"stream": "transcripts", "limit": 5, "fields": []any{"id", "text"}, "filter": map[string]any{"language": "en"}, "count": "exact"},
			func(t *testing.T, got any) {
				a := got.(mcptools.QueryRecordsArgs)
				if a.Stream != "transcripts" || a.Limit == nil || *a.Limit != 5 || !slices.Equal(a.Fields, []string{"id", "text"}) || a.Count != "exact" {
					t.Errorf("args = %+v", a)
				}
				if string(a.Filter) != `{"language":"en"}` {
					t.Errorf("filter = %s", a.Filter)
				}
			}},
		{"default applied", "search", map[string]any{"q": "needle"},
			func(t *testing.T, got any) {
				a := got.(mcptools.SearchArgs)
				if a.Q != "needle" || a.Mode != "lexical" || a.Limit != nil {
					t.Errorf("args = %+v", a)
				}
			}},
		{"null means absent", "read_record_field", map[string]any{"field_path": "text", "offset_chars": nil, "id": "c/s:1"},
			func(t *testing.T, got any) {
				a := got.(mcptools.ReadRecordFieldArgs)
				if a.OffsetChars != nil || a.FieldPath != "text" || a.ID != "c/s:1" {
					t.Errorf("args = %+v", a)
				}
			}},
		{"no arguments", "schema", nil,
			func(t *testing.T, got any) {
				if a := got.(mcptools.SchemaArgs); a != (mcptools.SchemaArgs{}) {
					t.Errorf("args = %+v", a)
				}
			}},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.taken())
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tc.tool, Arguments: tc.args}})
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if res.IsError {
				t.Fatalf("refused: %+v", res.StructuredContent)
			}
			calls := h.taken()
			if len(calls) != before+1 || calls[before].tool != tc.tool {
				t.Fatalf("handler calls = %+v, want one %s call", calls[before:], tc.tool)
			}
			tc.check(t, calls[before].args)
		})
	}
}

// TestNonObjectArguments sends arguments that are not a JSON object on the
// wire, which the typed client API cannot express.
func TestNonObjectArguments(t *testing.T) {
	h := &recorder{}
	c, _ := connect(t, h, mcpkit.RegisterOptions{})
	for name, args := range map[string]any{"array": []any{"q"}, "string": "q=needle", "number": 3} {
		t.Run(name, func(t *testing.T) {
			raw := rawRequest(t, c, "tools/call", map[string]any{"name": "search", "arguments": args})
			var res mcp.CallToolResult
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			checkAdapterError(t, &res, mcpkit.CodeInvalidJSON, "", "arguments must be a JSON object")
		})
	}
	if calls := h.taken(); len(calls) != 0 {
		t.Fatalf("handler was called: %+v", calls)
	}
}

func checkAdapterError(t *testing.T, res *mcp.CallToolResult, code, param, inMessage string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("result is not an error: %+v", res)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	errObj, _ := sc["error"].(map[string]any)
	if errObj == nil {
		t.Fatalf("structuredContent has no error object: %+v", res.StructuredContent)
	}
	if errObj["type"] != mcpkit.ErrorType || errObj["code"] != code {
		t.Errorf("error type/code = %v/%v, want %s/%s", errObj["type"], errObj["code"], mcpkit.ErrorType, code)
	}
	if p, _ := errObj["param"].(string); p != param {
		t.Errorf("param = %q, want %q", p, param)
	}
	msg, _ := errObj["message"].(string)
	if !strings.Contains(msg, inMessage) {
		t.Errorf("message %q does not contain %q", msg, inMessage)
	}
	if len(res.Content) != 1 {
		t.Fatalf("want one text content, got %d", len(res.Content))
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok || !strings.Contains(text.Text, code) || !strings.Contains(text.Text, msg) || strings.Contains(text.Text, "\n") {
		t.Errorf("text content %+v does not repeat code and message on one line", res.Content[0])
	}
}

// inToolsets counts the catalog tools whose toolset is one of sets.
func inToolsets(sets ...string) int {
	n := 0
	for _, tool := range mcptools.Tools() {
		if slices.Contains(sets, mcptools.Toolset(tool.Name)) {
			n++
		}
	}
	return n
}

func TestToolsetSelection(t *testing.T) {
	tests := []struct {
		name     string
		toolsets []string
		want     int
	}{
		{"nil registers all", nil, len(mcptools.Tools())},
		{"read", []string{"read"}, inToolsets("read")},
		{"events", []string{"events"}, inToolsets("events")},
		{"read and events", []string{"read", "events"}, len(mcptools.Tools())},
		{"empty registers none", []string{}, 0},
		{"unknown toolset only", []string{"admin"}, 0},
	}
	if inToolsets("read") == 0 || inToolsets("events") == 0 || inToolsets("read", "events") != len(mcptools.Tools()) {
		t.Fatalf("catalog toolsets are not read+events: %v", mcptools.Toolsets())
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := connect(t, &recorder{}, mcpkit.RegisterOptions{Toolsets: tc.toolsets})
			var res struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(rawRequest(t, c, "tools/list", map[string]any{}), &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Tools) != tc.want {
				t.Fatalf("listed %d tools, want %d", len(res.Tools), tc.want)
			}
		})
	}
}

func TestCustomArgErrorResult(t *testing.T) {
	var seen *mcpkit.ArgError
	opt := mcpkit.RegisterOptions{ArgErrorResult: func(e *mcpkit.ArgError) *mcp.CallToolResult {
		seen = e
		return mcp.NewToolResultError("custom: " + e.Code)
	}}
	c, _ := connect(t, &recorder{}, opt)
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "search", Arguments: map[string]any{"q": "x", "mode": "fuzzy"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != "custom: invalid_enum" {
		t.Fatalf("custom renderer not used: %+v", res)
	}
	if seen == nil || seen.Tool != "search" || seen.Field != "mode" {
		t.Fatalf("renderer got %+v", seen)
	}
}

func TestResourceTemplates(t *testing.T) {
	c, _ := connect(t, &recorder{}, mcpkit.RegisterOptions{})
	listed, err := c.ListResourceTemplates(context.Background(), mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	mime := map[string]string{}
	for _, rt := range mcptools.ResourceTemplates() {
		want[rt.Name] = rt.URITemplate.Raw()
		mime[rt.Name] = rt.MIMEType
	}
	if len(listed.ResourceTemplates) != len(want) {
		t.Fatalf("listed %d templates, want %d", len(listed.ResourceTemplates), len(want))
	}
	for _, rt := range listed.ResourceTemplates {
		if want[rt.Name] != rt.URITemplate.Raw() || rt.MIMEType != mime[rt.Name] || rt.MIMEType == "" || rt.Title == "" || rt.Description == "" {
			t.Errorf("template %+v does not match the catalog", rt)
		}
	}
	tests := []struct{ uri, template string }{
		{"pdpp://stream/transcripts", "stream"},
		{"pdpp://record/abc", "record"},
		{"pdpp://field-window/xyz", "field_window"},
		{"pdpp://blob/blob_1", "blob"},
	}
	for _, tc := range tests {
		t.Run(tc.template, func(t *testing.T) {
			res, err := c.ReadResource(context.Background(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: tc.uri}})
			if err != nil {
				t.Fatal(err)
			}
			text, ok := res.Contents[0].(mcp.TextResourceContents)
			if !ok || text.Text != `{"template":"`+tc.template+`"}` {
				t.Fatalf("read %s routed to %+v", tc.uri, res.Contents)
			}
		})
	}
}

package pdpp_test

import (
	"bytes"
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
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/reqid"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// wireTap keeps the result of every JSON-RPC response a client received,
// exactly as its bytes arrived.
type wireTap struct {
	mu   sync.Mutex
	last json.RawMessage
}

// record reads one received message (or batch) and keeps the raw result of
// its last response.
func (w *wireTap) record(msg []byte) {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 {
		return
	}
	type response struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	var batch []response
	if msg[0] == '[' {
		_ = json.Unmarshal(msg, &batch)
	} else {
		var one response
		if json.Unmarshal(msg, &one) == nil {
			batch = append(batch, one)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range batch {
		if len(r.ID) > 0 && len(r.Result) > 0 {
			w.last = append(json.RawMessage(nil), r.Result...)
		}
	}
}

// take returns the result recorded last and forgets it.
func (w *wireTap) take() json.RawMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.last
	w.last = nil
	return out
}

// tapReader hands a stdio client the server's lines and records each.
type tapReader struct {
	r   io.Reader
	tap *wireTap
	buf []byte
}

func (t *tapReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf = append(t.buf, p[:n]...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.tap.record(t.buf[:i])
		t.buf = t.buf[i+1:]
	}
	return n, err
}

// wireRequestID is the longest request id the hosted transport takes from
// a client (X-Request-Id): it stamps it into adapter errors, so replies are
// measured with the largest stamp.
var wireRequestID = strings.Repeat("r", 128)

// tapRoundTripper records every JSON reply body the HTTP client receives.
type tapRoundTripper struct{ tap *wireTap }

func (rt tapRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Request-Id", wireRequestID)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	rt.tap.record(b)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// wireTransports are the two ways a client reaches the server.
var wireTransports = []string{"stdio", "http"}

// wireServerName and wireServerVersion are the longest identity the server
// reports (pdpp.NewServer cuts longer ones), so the bytes the newest
// revision adds to every result (its serverInfo) are measured at their
// largest.
var (
	wireServerName    = strings.Repeat("n", mcptools.MaxServerInfoNameBytes)
	wireServerVersion = strings.Repeat("v", mcptools.MaxServerInfoVersionBytes)
)

// wireClient is the official Go SDK client connected at one protocol
// revision over one transport, with the bytes of every reply recorded.
type wireClient struct {
	cs      *sdk.ClientSession
	tap     *wireTap
	schemas map[string]*jsonschema.Schema
}

// connectWire serves s over kind ("stdio": newline-delimited JSON-RPC on
// pipes; "http": the hosted /mcp handler) and connects the official Go SDK
// client at version.
func connectWire(t *testing.T, s *server.MCPServer, kind, version string) *wireClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	tap := &wireTap{}
	var tr sdk.Transport
	switch kind {
	case "stdio":
		clientIn, serverOut := io.Pipe()
		serverIn, clientOut := io.Pipe()
		sctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- transport.ServeStdio(sctx, s, serverIn, serverOut, slog.New(slog.DiscardHandler))
		}()
		t.Cleanup(func() {
			stop()
			_ = clientOut.Close()
			_ = serverOut.Close()
			<-done
		})
		tr = &sdk.IOTransport{Reader: io.NopCloser(&tapReader{r: clientIn, tap: tap}), Writer: clientOut}
	case "http":
		h, err := transport.NewHTTPHandler(s, transport.HTTPConfig{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		tr = &sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: tapRoundTripper{tap}}}
	default:
		t.Fatalf("unknown transport %q", kind)
	}
	cl := sdk.NewClient(&sdk.Implementation{Name: "pdpp-wire-test", Version: "0"}, nil)
	cs, err := cl.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("%s connect at %s: %v", kind, version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("%s: negotiated %s, want %s", kind, got, version)
	}
	return &wireClient{cs: cs, tap: tap}
}

// listTools lists the tools and returns the result's bytes as sent; it
// compiles every outputSchema from those bytes.
func (w *wireClient) listTools(t *testing.T) json.RawMessage {
	t.Helper()
	w.tap.take()
	if _, err := w.cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	raw := w.tap.take()
	if len(raw) == 0 {
		t.Fatal("tools/list: no reply recorded")
	}
	var list struct {
		Tools []struct {
			Name   string          `json:"name"`
			Output json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	w.schemas = map[string]*jsonschema.Schema{}
	for _, tool := range list.Tools {
		w.schemas[tool.Name] = compileSchema(t, tool.Name, tool.Output)
	}
	return raw
}

// call calls tool and returns the result's bytes as sent, with the result
// as the client decoded it; structuredContent must validate against the
// listed outputSchema.
func (w *wireClient) call(t *testing.T, tool string, args map[string]any) (json.RawMessage, *sdk.CallToolResult) {
	t.Helper()
	if w.schemas == nil {
		w.listTools(t)
	}
	w.tap.take()
	res, err := w.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, mustJSON(args), err)
	}
	raw := w.tap.take()
	if len(raw) == 0 {
		t.Fatalf("%s: no reply recorded", tool)
	}
	var got struct {
		Structured json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if s := w.schemas[tool]; s != nil && !res.IsError {
		if err := validateJSON(s, string(got.Structured)); err != nil {
			t.Errorf("%s %s: structuredContent does not validate against its outputSchema: %v", tool, mustJSON(args), err)
		}
	}
	return raw, res
}

// wireServer builds the PDPP server over the RS handler (behind a reqLog),
// with the longest server identity and the given toolsets.
func wireServer(t *testing.T, handler http.Handler, toolsets []string) (*server.MCPServer, *reqLog) {
	t.Helper()
	log := &reqLog{next: handler}
	srv := httptest.NewServer(log)
	t.Cleanup(srv.Close)
	source := func(context.Context) (string, error) { return tokClient, nil }
	rsClient, err := rs.New(srv.URL, source, rs.Options{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := pdpp.NewServer(pdpp.New(pdpp.Config{RS: rsClient, Token: source}),
		pdpp.ServerOptions{Name: wireServerName, Version: wireServerVersion, Toolsets: toolsets})
	return s, log
}

// forEachWire runs fn once per transport and protocol revision we serve,
// each with a server of its own over the RS handler (exposing toolsets)
// and the official Go SDK client connected to it; log records what the RS
// answered.
func forEachWire(t *testing.T, handler http.Handler, toolsets []string, fn func(t *testing.T, w *wireClient, log *reqLog, version string)) {
	for _, kind := range wireTransports {
		for _, version := range transport.DefaultProtocolVersions() {
			t.Run(kind+"/"+version, func(t *testing.T) {
				s, log := wireServer(t, handler, toolsets)
				fn(t, connectWire(t, s, kind, version), log, version)
			})
		}
	}
}

// TestToolsListBudgetsOnTheWire measures tools/list as each client
// receives it, at every revision over stdio and HTTP, for the default
// exposure and for --toolsets read, against the catalog's budgets: the
// budgets of revisions up to 2025-11-25, and the larger ones of 2026-07-28,
// which adds resultType, cache hints and the server's identity.
func TestToolsListBudgetsOnTheWire(t *testing.T) {
	demo := newDemoHarness(t, tokClient)
	exposures := []struct {
		name                   string
		toolsets               []string
		budget, newest         int
		ceiling, ceilingNewest int
	}{
		{"all", nil, mcptools.MaxToolsListBytes, mcptools.MaxToolsListBytesNewest, ceilingAllTools, ceilingAllToolsNewest},
		{"read", []string{"read"}, mcptools.ToolsetListBudget("read"), mcptools.ToolsetListBudgetNewest("read"), ceilingReadOnly, ceilingReadOnlyNewest},
	}
	for _, e := range exposures {
		t.Run(e.name, func(t *testing.T) {
			if e.budget <= 0 || e.budget > e.ceiling || e.newest <= 0 || e.newest > e.ceilingNewest {
				t.Fatalf("catalog budgets %d / %d are missing or above the ceilings %d / %d", e.budget, e.newest, e.ceiling, e.ceilingNewest)
			}
			forEachWire(t, demo.log.next, e.toolsets, func(t *testing.T, w *wireClient, _ *reqLog, version string) {
				raw := w.listTools(t)
				budget := e.budget
				if mcp.IsModernProtocol(version) {
					budget = e.newest
				}
				if len(raw) > budget {
					t.Errorf("tools/list is %d bytes on the wire, budget %d", len(raw), budget)
				}
				t.Logf("tools/list: %d bytes (budget %d)", len(raw), budget)
			})
		})
	}
}

// wireCall is one tool call of a reply-budget case.
type wireCall struct {
	tool string
	args map[string]any
}

// checkReplyOnTheWire calls c and checks the reply's bytes as sent against
// the tool's catalog budget, for the RS body the call read last; at the
// newest revision the reply must carry what that revision adds, so the
// bytes measured are the ones a client of that revision gets.
func checkReplyOnTheWire(t *testing.T, w *wireClient, log *reqLog, version string, c wireCall) (json.RawMessage, *sdk.CallToolResult) {
	t.Helper()
	log.reset()
	raw, res := w.call(t, c.tool, c.args)
	budget, ok := mcptools.ResultBudgetOf(c.tool)
	if !ok {
		t.Fatalf("catalog declares no reply budget for %s", c.tool)
	}
	rsBody := 0
	if ex, ok := log.last(func(p string) bool { return p != "/v1/schema" || c.tool == "schema" }); ok {
		rsBody = len(ex.Body)
	}
	if limit := budget.Limit(rsBody); len(raw) > limit {
		t.Errorf("%s %s: %d bytes on the wire at %s, budget %d", c.tool, mustJSON(c.args), len(raw), version, limit)
	}
	if modern := mcp.IsModernProtocol(version); modern != bytes.Contains(raw, []byte(`"resultType":"complete"`)) {
		t.Errorf("%s: reply at %s does not carry that revision's resultType as expected", c.tool, version)
	}
	return raw, res
}

// budgetBreakingRS answers every route with bodies built to break the reply
// budgets: a schema of 300 streams, pages of 100 records and hits with long
// and binary-like values, 100 groups with long keys, a 20,000-character
// window, 500 subscriptions (one with a 100 KB callback), and a
// subscription advertisement with 5,000 event types.
func budgetBreakingRS() http.Handler {
	long := strings.Repeat("word ", 4000)
	b64 := strings.Repeat("QUJDRA", 2000)
	record := func(i int) string {
		var f strings.Builder
		for j := range 40 {
			fmt.Fprintf(&f, `"f%02d":%q,`, j, long[:1000+j*10])
		}
		return fmt.Sprintf(`{"object":"record","id":"n%d-%s","stream":"notes","connection_id":"cin_a","data":{%s"body":%q,"blob":%q}}`,
			i, strings.Repeat("x", 200), f.String(), long, b64)
	}
	var recs, hits, groups, streams []string
	for i := range 100 {
		recs = append(recs, record(i))
		hits = append(hits, fmt.Sprintf(`{"object":"search_result","record_key":"n%d-%s","stream":"notes","connection_id":"cin_a","matched_fields":["body"],"snippet":{"field":"body","text":%q},"evidence_excerpts":[{"field_path":"body","preview_text":%q,"truncated":true}]}`,
			i, strings.Repeat("y", 300), long, long))
		groups = append(groups, fmt.Sprintf(`{"key":%q,"count":%d}`, strings.Repeat("k<", 200)+fmt.Sprint(i), i))
	}
	for i := range 300 {
		streams = append(streams, fmt.Sprintf(`{"name":"s%03d_%s","fields":{"body":{"type":"string","description":%q}}}`, i, strings.Repeat("z", 100), long[:500]))
	}
	schema := `{"object":"schema","bearer":{"token_kind":"client"},"streams":[` + strings.Join(streams, ",") + `]}`
	list := `{"object":"list","data":[` + strings.Join(recs, ",") + `],"has_more":true,"next_cursor":"c2"}`
	search := `{"object":"list","data":[` + strings.Join(hits, ",") + `],"has_more":true,"next_cursor":"s2"}`
	agg := `{"object":"aggregation","stream":"notes","metric":"count","group_by":"body","groups":[` + strings.Join(groups, ",") + `],"other_count":7}`
	window := fieldWindowBody(fmt.Sprintf(`{"text":%q,"start_chars":0,"end_chars":20000,"total_chars":40000,"limit_chars":16384,"complete":false,"has_more":true,"next_offset_chars":20000}`, long))

	var subs [][]byte
	for i := range 500 {
		callback := "https://hooks.example.com/" + strings.Repeat("p", 40)
		if i == 1 {
			callback = "https://hooks.example.com/" + strings.Repeat("p", 100_000)
		}
		subs = append(subs, subscriptionJSON(fmt.Sprintf("sub_%04d", i), callback, ""))
	}
	var types []string
	for i := range 5000 {
		types = append(types, fmt.Sprintf(`{"type":"x.event.%d","description":"kind %d"}`, i, i))
	}
	adv := `{"capabilities":{"client_event_subscriptions":{"supported":true,"endpoint":"/v1/event-subscriptions","event_types":[` +
		strings.Join(types, ",") + `]}}}`
	created := []byte(`{"subscription_id":"sub_0001","secret":"whsec_c2VjcmV0c2VjcmV0c2VjcmV0","status":"pending_verification","callback_url":` +
		mustJSON("https://hooks.example.com/"+strings.Repeat("p", 100_000)) + `,"created_at":"2026-01-01T00:00:00Z"}`)
	events := newSubsRS(subs, created, "evt_"+strings.Repeat("e", 100), adv)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if strings.HasPrefix(path, "/v1/event-subscriptions") || strings.HasPrefix(path, "/.well-known/") {
			events.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		body := record(1)
		switch {
		case path == "/v1/schema":
			body = schema
		case strings.HasPrefix(path, "/v1/search"):
			body = search
		case strings.HasSuffix(path, "/aggregate"):
			body = agg
		case strings.HasSuffix(path, "/records"):
			body = list
		case strings.HasSuffix(path, "/field-window"):
			body = window
		}
		_, _ = io.WriteString(w, body)
	})
}

// htmlDenseRS answers every route with bodies dense with <, > and &,
// which a reply escapes to six bytes each, a little under and over the
// reply budgets: 100 records, hits and groups, a schema, subscriptions.
func htmlDenseRS(n int) http.Handler {
	dense := strings.Repeat("<a&b>", n)
	var recs, hits, groups, subs []string
	for i := range 100 {
		recs = append(recs, fmt.Sprintf(`{"object":"record","id":"n%d","stream":"notes","connection_id":"cin_a","data":{"title":%q,"body":%q}}`, i, dense[:min(len(dense), 150)], dense))
		hits = append(hits, fmt.Sprintf(`{"object":"search_result","record_key":"n%d","stream":"notes","connection_id":"cin_a","matched_fields":["body"],"snippet":{"field":"body","text":%q},"evidence_excerpts":[{"field_path":"body","preview_text":%q,"truncated":true}]}`, i, dense, dense))
		groups = append(groups, fmt.Sprintf(`{"key":%q,"count":%d}`, dense, i))
		subs = append(subs, fmt.Sprintf(`{"object":"event_subscription","subscription_id":"sub_%04d","status":"active","callback_url":"https://hooks.example.com/%s","scope":{"streams":[{"name":"notes","connection_id":"cin_a"}]},"note":%q}`, i, strings.Repeat("a", 20), dense))
	}
	schema := `{"object":"schema","bearer":{"token_kind":"client"},"streams":[{"name":"notes","description":` + mustJSON(strings.Repeat(dense, 10)) + `}]}`
	bodies := map[string]string{
		"records":   `{"object":"list","data":[` + strings.Join(recs, ",") + `],"has_more":false}`,
		"search":    `{"object":"list","data":[` + strings.Join(hits, ",") + `],"has_more":false}`,
		"aggregate": `{"object":"aggregation","stream":"notes","metric":"count","group_by":"body","groups":[` + strings.Join(groups, ",") + `],"other_count":0}`,
		"subs":      `{"object":"list","data":[` + strings.Join(subs, ",") + `]}`,
		"sub":       subs[1],
		"record":    recs[1],
		"schema":    schema,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		p := r.URL.Path
		key := "record"
		switch {
		case p == "/v1/schema":
			key = "schema"
		case strings.HasPrefix(p, "/v1/search"):
			key = "search"
		case strings.HasSuffix(p, "/aggregate"):
			key = "aggregate"
		case strings.HasSuffix(p, "/records"):
			key = "records"
		case p == "/v1/event-subscriptions":
			key = "subs"
		case strings.HasPrefix(p, "/v1/event-subscriptions/"):
			key = "sub"
		}
		_, _ = io.WriteString(w, bodies[key])
	})
}

// hugeErrorRS answers the token check and then every request with an RS
// 400 whose envelope is built to break every budget: a 20,000-character
// message, 1,100 available connections and a 60 KB extra member, each many
// times what a reply keeps of it, so the replies are those of any larger
// envelope (TestErrorResultsFitTheirBudgets reads one ten times larger in
// process): the same members cut at the same places, the same counts of
// digits in the sizes and totals they report.
func hugeErrorRS() http.Handler {
	var conns []string
	for i := range 1100 {
		conns = append(conns, fmt.Sprintf(`{"connection_id":"cin_%04d","display_name":"Account <%d>"}`, i, i))
	}
	envelope := `{"error":{"type":"invalid_request_error","code":"ambiguous_connection","message":` + mustJSON(strings.Repeat("too many <", 2000)) +
		`,"param":"connection_id","available_connections":[` + strings.Join(conns, ",") + `],"debug":` + mustJSON(strings.Repeat("d", 60000)) + `}}`
	return faultyRS(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, envelope)
	})
}

// listMember names the structured output member that lists each list
// tool's items.
var listMember = map[string]string{"search": "results", "query_records": "records", "list_event_subscriptions": "subscriptions"}

// TestRepliesFitBudgetsOnTheWire measures every tool's default reply as
// each client receives it, over stdio and HTTP at every protocol revision
// we serve, through the official Go SDK client, against each tool's
// catalog budget: on the demo RS at the largest limits, on an RS built to
// break every budget, and on an RS whose every answer is a huge error
// envelope. The server reports the longest name and version it keeps, and
// HTTP requests carry the longest request id, so what the newest revision
// and the hosted transport add is measured at its largest.
func TestRepliesFitBudgetsOnTheWire(t *testing.T) {
	if !reqid.SaneID(wireRequestID) || reqid.SaneID(wireRequestID+"r") {
		t.Fatalf("the test's request id (%d bytes) is not the longest the transport keeps", len(wireRequestID))
	}
	demo := newDemoHarness(t, tokClient)
	top := longestTranscripts(t, demo)[0]
	topID := top.conn + "/transcripts:" + top.id
	events := []wireCall{
		{"discover_event_subscription_capabilities", nil},
		{"list_event_subscriptions", nil},
		{"get_event_subscription", map[string]any{"subscription_id": "sub_0001"}},
		{"update_event_subscription", map[string]any{"subscription_id": "sub_0001", "enabled": false}},
		{"send_test_event", map[string]any{"subscription_id": "sub_0001"}},
		{"delete_event_subscription", map[string]any{"subscription_id": "sub_0001"}},
		{"create_event_subscription", map[string]any{"callback_url": "https://hooks.example.com/pdpp"}},
	}
	readWireCalls := []wireCall{
		{"search", map[string]any{"q": "needle"}},
		{"query_records", map[string]any{"stream": "notes"}},
		{"aggregate", map[string]any{"stream": "notes", "metric": "count"}},
		{"fetch", map[string]any{"id": "cin_a/notes:n1"}},
		{"read_record_field", map[string]any{"id": "cin_a/notes:n1", "field_path": "body"}},
	}
	htmlCalls := []wireCall{
		{"schema", nil},
		{"search", map[string]any{"q": "needle", "limit": 100}},
		{"query_records", map[string]any{"stream": "notes", "limit": 100}},
		{"aggregate", map[string]any{"stream": "notes", "metric": "count", "group_by": "body", "limit": 100}},
		{"fetch", map[string]any{"id": "cin_a/notes:n1"}},
		{"list_event_subscriptions", nil},
		{"get_event_subscription", map[string]any{"subscription_id": "sub_0001"}},
	}
	cases := []struct {
		name    string
		rs      http.Handler
		calls   []wireCall
		wantErr bool
	}{
		{"demo RS", demo.log.next, []wireCall{
			{"schema", nil},
			{"search", map[string]any{"q": "launch", "limit": 100}},
			{"search", map[string]any{"q": "review", "limit": 100}},
			{"query_records", map[string]any{"stream": "transcripts", "limit": 100}},
			{"aggregate", map[string]any{"stream": "transcripts", "metric": "count", "group_by_time": "created_at", "granularity": "day", "limit": 100}},
			{"fetch", map[string]any{"id": topID}},
			{"read_record_field", map[string]any{"id": topID, "field_path": "text", "limit_chars": 16384}},
			{"read_record_field", map[string]any{"id": topID, "field_path": "text", "q": "the"}},
			{"discover_event_subscription_capabilities", nil},
			{"list_event_subscriptions", nil},
		}, false},
		{"budget-breaking RS", budgetBreakingRS(), append([]wireCall{
			{"schema", nil},
			{"search", map[string]any{"q": "needle", "limit": 100}},
			{"query_records", map[string]any{"stream": "notes", "limit": 100}},
			{"aggregate", map[string]any{"stream": "notes", "metric": "count", "group_by": "body", "limit": 100}},
			{"fetch", map[string]any{"id": "cin_a/notes:n1"}},
			{"read_record_field", map[string]any{"id": "cin_a/notes:n1", "field_path": "body", "limit_chars": 16384}},
			{"read_record_field", map[string]any{"id": "cin_a/notes:n1", "field_path": "body", "limit_chars": 1}},
		}, events...), false},
		{"HTML-dense RS, short values", htmlDenseRS(6), htmlCalls, false},
		{"HTML-dense RS, long values", htmlDenseRS(80), htmlCalls, false},
		{"RS error of 400,000 members", errorMembersRS(strings.Repeat(`,"m":0`, 400_000)), readWireCalls, true},
		{"huge RS error", hugeErrorRS(), append(readWireCalls, events[1:]...), true},
	}
	// Every catalog tool is held to its budget against the RS built to break it.
	breaking := map[string]bool{}
	for _, c := range cases[1].calls {
		breaking[c.tool] = true
	}
	for _, tool := range mcptools.Tools() {
		if !breaking[tool.Name] {
			t.Errorf("tool %s has no call in the %q case: add one, and a large answer for its route to budgetBreakingRS", tool.Name, cases[1].name)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachWire(t, tc.rs, nil, func(t *testing.T, w *wireClient, log *reqLog, version string) {
				for _, c := range tc.calls {
					_, res := checkReplyOnTheWire(t, w, log, version, c)
					if res.IsError != tc.wantErr {
						t.Errorf("%s %s: isError %v, want %v", c.tool, mustJSON(c.args), res.IsError, tc.wantErr)
					}
					// A list keeps its items' identities in structured
					// output, whatever the reply escapes.
					if member := listMember[c.tool]; member != "" && !tc.wantErr {
						if sc, _ := res.StructuredContent.(map[string]any); sc[member] == nil {
							t.Errorf("%s %s: structured output lost %s: %.3000s", c.tool, mustJSON(c.args), member, mustJSON(sc))
						}
					}
				}
			})
		})
	}
}

// TestServerIdentityIsBounded: the name and version the server reports,
// which the newest revision repeats in every result, are cut on a
// character boundary to the catalog's bounds as JSON encodes them
// (multi-byte characters, HTML-escaped and invalid bytes included), and
// kept whole within them.
func TestServerIdentityIsBounded(t *testing.T) {
	tests := []struct {
		name, version string
		wantName      string
	}{
		{"pdpp", "v1.2.3", "pdpp"},
		{strings.Repeat("n", 64), strings.Repeat("v", 64), strings.Repeat("n", 64)},
		{strings.Repeat("n", 65), strings.Repeat("v", 500), strings.Repeat("n", 64)},
		{strings.Repeat("é", 40), "v", strings.Repeat("é", 32)},
		{strings.Repeat("<&>", 40), "v", strings.Repeat("<&>", 3) + "<"},
		// Sent as \ufffd, six bytes each; a client reads U+FFFD.
		{strings.Repeat("\xff", 40), "v", strings.Repeat("\ufffd", 10)},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%.12q", tc.name), func(t *testing.T) {
			s := pdpp.NewServer(pdpp.New(pdpp.Config{}), pdpp.ServerOptions{Name: tc.name, Version: tc.version})
			_, ir := startInProcess(t, s, "pdpp-identity-test")
			if ir.ServerInfo.Name != tc.wantName {
				t.Errorf("name %q, want %q", ir.ServerInfo.Name, tc.wantName)
			}
			for what, v := range map[string]struct {
				got   string
				bound int
			}{"name": {ir.ServerInfo.Name, mcptools.MaxServerInfoNameBytes}, "version": {ir.ServerInfo.Version, mcptools.MaxServerInfoVersionBytes}} {
				enc, _ := json.Marshal(v.got)
				if len(enc)-2 > v.bound {
					t.Errorf("%s encodes to %d bytes, bound %d", what, len(enc)-2, v.bound)
				}
			}
			if len(tc.version) <= mcptools.MaxServerInfoVersionBytes && ir.ServerInfo.Version != tc.version {
				t.Errorf("version %q cut to %q", tc.version, ir.ServerInfo.Version)
			}
		})
	}
}

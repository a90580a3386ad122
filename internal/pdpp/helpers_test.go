package pdpp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// Fixed demo tokens, so rendered output is the same on every run.
const (
	tokClient = "pdpptest_client_token_fixed_0001"
	tokNarrow = "pdpptest_narrow_token_fixed_0002"
	tokOwner  = "pdpptest_owner_token_fixed_0003"
	tokBad    = "pdpptest_not_a_granted_token_999"
)

// Demo data facts (internal/demors/store).
const (
	connMain  = "cin_demo_loom_main"
	connPeer  = "cin_demo_loom_peer"
	connNotes = "cin_demo_notes"
)

// exchange is one request that reached an RS, with the answer it got.
type exchange struct {
	Line   string // "METHOD path?query"
	Path   string
	Query  string
	Status int
	Body   []byte
}

// reqLog records every request that reached an RS, with its answer, and lets
// a test inject a failure for the requests a predicate selects.
type reqLog struct {
	mu    sync.Mutex
	log   []exchange
	fault atomic.Pointer[faultRule]
	next  http.Handler
}

type faultRule struct {
	match  func(r *http.Request) bool
	status int
	body   string
}

func (l *reqLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	line := r.Method + " " + r.URL.Path
	if r.URL.RawQuery != "" {
		line += "?" + r.URL.RawQuery
	}
	// The answer is buffered and logged before the caller can see it, so a
	// test that inspects the log after a call always finds that call's requests.
	rec := httptest.NewRecorder()
	if f := l.fault.Load(); f != nil && f.match(r) {
		rec.Header().Set("Content-Type", "application/json")
		rec.WriteHeader(f.status)
		_, _ = io.WriteString(rec, f.body)
	} else {
		l.next.ServeHTTP(rec, r)
	}
	body := rec.Body.Bytes()
	l.mu.Lock()
	l.log = append(l.log, exchange{Line: line, Path: r.URL.Path, Query: r.URL.RawQuery, Status: rec.Code, Body: append([]byte(nil), body...)})
	l.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// injectFault makes the RS answer status/body to the requests match selects,
// until the returned function is called.
func (l *reqLog) injectFault(match func(r *http.Request) bool, status int, body string) func() {
	l.fault.Store(&faultRule{match: match, status: status, body: body})
	return func() { l.fault.Store(nil) }
}

// reset forgets the recorded requests.
func (l *reqLog) reset() {
	l.mu.Lock()
	l.log = nil
	l.mu.Unlock()
}

// exchanges returns the recorded exchanges.
func (l *reqLog) exchanges() []exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]exchange(nil), l.log...)
}

// requests returns the recorded request lines.
func (l *reqLog) requests() []string {
	var out []string
	for _, e := range l.exchanges() {
		out = append(out, e.Line)
	}
	return out
}

// matching returns the recorded request lines whose path satisfies keep.
func (l *reqLog) matching(keep func(path string) bool) []string {
	var out []string
	for _, e := range l.exchanges() {
		if keep(e.Path) {
			out = append(out, e.Line)
		}
	}
	return out
}

// last returns the last exchange whose path satisfies keep.
func (l *reqLog) last(keep func(path string) bool) (exchange, bool) {
	ex := l.exchanges()
	for i := len(ex) - 1; i >= 0; i-- {
		if keep(ex[i].Path) {
			return ex[i], true
		}
	}
	return exchange{}, false
}

// isDataPath reports whether an RS path returns record data (records,
// record, field window, aggregate, search, blob) rather than discovery.
func isDataPath(path string) bool {
	switch {
	case strings.HasPrefix(path, "/v1/search"), strings.HasPrefix(path, "/v1/blobs/"):
		return true
	case strings.HasPrefix(path, "/v1/streams/") && strings.Count(path, "/") >= 4:
		return true // /v1/streams/{s}/records..., /v1/streams/{s}/aggregate
	}
	return false
}

// isRecordsPath reports whether path is a records endpoint (list, record or
// field window).
func isRecordsPath(path string) bool {
	return strings.HasPrefix(path, "/v1/streams/") && strings.Contains(path, "/records")
}

// harness is one adapter, served by mcp-go and reached by an in-process MCP
// client, over one RS behind a reqLog.
type harness struct {
	t       testing.TB
	log     *reqLog
	rsURL   string
	demo    *demors.Server // nil when the RS is not the demo RS
	token   atomic.Value   // string: the bearer the adapter forwards
	client  *client.Client
	init    *mcp.InitializeResult
	tools   map[string]mcp.Tool
	schemas map[string]*jsonschema.Schema // compiled outputSchema per tool
	// outputSchemas are the raw outputSchema values of tools/list.
	outputSchemas map[string]json.RawMessage
	rawSeq        atomic.Int64
}

var demoTokens = map[string]string{"client": tokClient, "narrow": tokNarrow, "owner": tokOwner}

// newDemoHarness starts a demo RS with the fixed tokens, the adapter over it
// with bearer tok, and an initialized MCP client.
func newDemoHarness(t testing.TB, tok string) *harness {
	t.Helper()
	demo, err := demors.New(demors.Config{Tokens: demoTokens})
	if err != nil {
		t.Fatalf("demors.New: %v", err)
	}
	t.Cleanup(func() { _ = demo.Close() })
	h := newHarness(t, demo.Handler(), tok)
	h.demo = demo
	return h
}

// newHarness starts an httptest RS serving handler behind a reqLog and an
// adapter over it that forwards tok.
func newHarness(t testing.TB, handler http.Handler, tok string) *harness {
	t.Helper()
	return newHarnessWith(t, handler, tok, nil)
}

// newHarnessWith is newHarness with wire adjusting the adapter's Config
// (RS and Token already set) before the adapter is built.
func newHarnessWith(t testing.TB, handler http.Handler, tok string, wire func(*pdpp.Config)) *harness {
	t.Helper()
	h := &harness{t: t, log: &reqLog{next: handler}}
	srv := httptest.NewServer(h.log)
	t.Cleanup(srv.Close)
	h.rsURL = srv.URL
	h.token.Store(tok)
	source := func(context.Context) (string, error) { return h.token.Load().(string), nil }
	rsClient, err := rs.New(srv.URL, source, rs.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("rs.New: %v", err)
	}
	// The tests' webhook receivers listen on loopback, as in the demo, so
	// private callbacks are allowed unless wire says otherwise.
	cfg := pdpp.Config{RS: rsClient, Token: source, AllowPrivateWebhooks: true}
	if wire != nil {
		wire(&cfg)
	}
	h.client, h.init = startInProcess(t, pdpp.NewServer(pdpp.New(cfg), pdpp.ServerOptions{}), "pdpp-e2e-test")
	h.loadTools()
	return h
}

// readCalls are one call of every data tool whose reply renders RS data,
// against the fake RSes of the fault and distrust tests (notes, n1).
var readCalls = []struct {
	tool string
	args map[string]any
}{
	{"search", map[string]any{"q": "needle"}},
	{"fetch", map[string]any{"id": "cin_a/notes:n1"}},
	{"read_record_field", map[string]any{"id": "cin_a/notes:n1", "field_path": "body"}},
	{"query_records", map[string]any{"stream": "notes"}},
	{"aggregate", map[string]any{"stream": "notes", "metric": "count"}},
}

// startInProcess starts an in-process MCP client of s and initializes it as
// clientName; the client is closed when the test ends.
func startInProcess(t testing.TB, s *server.MCPServer, clientName string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatalf("NewInProcessClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("client Start: %v", err)
	}
	initReq := mcp.InitializeRequest{}
	initReq.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	initReq.Params.ClientInfo = mcp.Implementation{Name: clientName, Version: "0"}
	ir, err := c.Initialize(ctx, initReq)
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return c, ir
}

// loadTools lists the tools and compiles every outputSchema exactly as the
// tools/list answer carries it (read raw, not through a typed decoder).
func (h *harness) loadTools() {
	h.t.Helper()
	res, err := h.client.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		h.t.Fatalf("tools/list: %v", err)
	}
	h.tools = map[string]mcp.Tool{}
	for _, tool := range res.Tools {
		h.tools[tool.Name] = tool
	}
	raw := h.rawRequest("tools/list", nil)
	var list struct {
		Tools []struct {
			Name         string          `json:"name"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		h.t.Fatalf("tools/list: %v", err)
	}
	h.outputSchemas = map[string]json.RawMessage{}
	h.schemas = map[string]*jsonschema.Schema{}
	for _, tool := range list.Tools {
		if len(tool.OutputSchema) == 0 {
			continue
		}
		h.outputSchemas[tool.Name] = tool.OutputSchema
		h.schemas[tool.Name] = compileSchema(h.t, tool.Name, tool.OutputSchema)
	}
}

// rawRequest sends one JSON-RPC request through the client's transport and
// returns the raw result.
func (h *harness) rawRequest(method string, params any) json.RawMessage {
	h.t.Helper()
	resp, err := h.client.GetTransport().SendRequest(context.Background(), transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1000 + h.rawSeq.Add(1))), Method: method, Params: params,
	})
	if err != nil {
		h.t.Fatalf("%s: %v", method, err)
	}
	if resp.Error != nil {
		h.t.Fatalf("%s: %s", method, resp.Error.Message)
	}
	return resp.Result
}

func compileSchema(t testing.TB, name string, raw []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("tool %s: outputSchema is not JSON: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatalf("tool %s: outputSchema: %v", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("tool %s: outputSchema does not compile: %v", name, err)
	}
	return s
}

// validateJSON checks the JSON text raw against the compiled schema s.
func validateJSON(s *jsonschema.Schema, raw string) error {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// callResult is one tool result with its decoded parts.
type callResult struct {
	Tool       string
	Args       map[string]any
	Res        *mcp.CallToolResult
	Text       string         // every text block of content[], joined
	Structured map[string]any // structuredContent as JSON
	RawStruct  string         // structuredContent re-encoded
	RawContent string         // content[] re-encoded
	Meta       map[string]any // _meta
}

func (r callResult) errorObject() map[string]any {
	e, _ := r.Structured["error"].(map[string]any)
	return e
}

func (r callResult) errorCode() string {
	s, _ := r.errorObject()["code"].(string)
	return s
}

// call invokes a tool over MCP and checks what every result must satisfy: a
// text block, and structuredContent that validates against the tool's
// outputSchema from tools/list.
func (h *harness) call(t testing.TB, tool string, args map[string]any) callResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := h.client.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s %s: transport error: %v", tool, mustJSON(args), err)
	}
	out := callResult{Tool: tool, Args: args, Res: res}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			texts = append(texts, tc.Text)
		}
	}
	out.Text = strings.Join(texts, "\n")
	if out.Text == "" {
		t.Errorf("%s %s: no text in content[]", tool, mustJSON(args))
	}
	out.RawContent = mustJSON(res.Content)
	if res.StructuredContent == nil {
		t.Errorf("%s %s: no structuredContent", tool, mustJSON(args))
	} else {
		out.RawStruct = mustJSON(res.StructuredContent)
		if err := json.Unmarshal([]byte(out.RawStruct), &out.Structured); err != nil {
			t.Errorf("%s: structuredContent is not an object: %v", tool, err)
		}
		if s := h.schemas[tool]; s != nil {
			if err := validateJSON(s, out.RawStruct); err != nil {
				t.Errorf("%s %s: structuredContent does not validate against outputSchema: %v", tool, mustJSON(args), err)
			}
		}
	}
	if res.Meta != nil {
		out.Meta = map[string]any{}
		_ = json.Unmarshal([]byte(mustJSON(res.Meta)), &out.Meta)
	}
	return out
}

// mustOK calls a tool and fails the test when the result is an error.
func (h *harness) mustOK(t testing.TB, tool string, args map[string]any) callResult {
	t.Helper()
	r := h.call(t, tool, args)
	if r.Res.IsError {
		t.Fatalf("%s %s: unexpected error result:\n%s", tool, mustJSON(args), r.Text)
	}
	return r
}

// readResource reads one resource URI over MCP.
func (h *harness) readResource(t testing.TB, uri string) ([]mcp.ResourceContents, error) {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := h.client.ReadResource(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return res.Contents, nil
}

// readResourceJSON reads a resource whose one content is JSON text.
func (h *harness) readResourceJSON(t testing.TB, uri string) map[string]any {
	t.Helper()
	contents, err := h.readResource(t, uri)
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	if len(contents) != 1 {
		t.Fatalf("resources/read %s: %d contents, want 1", uri, len(contents))
	}
	tc, ok := contents[0].(mcp.TextResourceContents)
	if !ok {
		t.Fatalf("resources/read %s: content is %T, want text", uri, contents[0])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &m); err != nil {
		t.Fatalf("resources/read %s: not JSON: %v", uri, err)
	}
	return m
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

// rsGet reads the RS directly (not through the adapter) with tok.
func (h *harness) rsGet(t testing.TB, tok, pathAndQuery string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.rsURL+pathAndQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", pathAndQuery, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", pathAndQuery, err)
	}
	return resp.StatusCode, b
}

// fullField reads one field of one record straight from the RS.
func (h *harness) fullField(t testing.TB, conn, stream, recordID, field string) string {
	t.Helper()
	status, body := h.rsGet(t, tokClient, "/v1/streams/"+stream+"/records/"+recordID+"?connection_id="+conn)
	if status != http.StatusOK {
		t.Fatalf("RS record %s/%s:%s: HTTP %d %s", conn, stream, recordID, status, body)
	}
	var rec struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	s, ok := rec.Data[field].(string)
	if !ok {
		t.Fatalf("RS record %s: field %s is %T", recordID, field, rec.Data[field])
	}
	return s
}

// textFields returns the string fields of one record, read straight from
// the RS.
func (h *harness) textFields(t testing.TB, ref handles.RecordRef) map[string]string {
	t.Helper()
	status, body := h.rsGet(t, tokClient, "/v1/streams/"+ref.Stream+"/records/"+ref.RecordID+"?connection_id="+ref.ConnectionID)
	if status != http.StatusOK {
		t.Fatalf("RS record %s: HTTP %d %s", ref.ID(), status, body)
	}
	var rec struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range rec.Data {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// callLine is one `tool {json}` call shown in model-visible text.
type callLine struct {
	Tool string
	Args map[string]any
	Raw  string
}

var blobURIRE = regexp.MustCompile(`pdpp://blob/[A-Za-z0-9_.-]+`)

var callLineRE = regexp.MustCompile(`\b(schema|query_records|aggregate|search|fetch|read_record_field) (\{)`)

// visibleCalls finds every `tool {json args}` in text, decoding the JSON
// object that follows the tool name.
func visibleCalls(text string) []callLine {
	return visibleCallsOf(callLineRE, text)
}

// visibleCallsOf is visibleCalls for the tool names re matches (group 1,
// then group 2 at the opening brace).
func visibleCallsOf(re *regexp.Regexp, text string) []callLine {
	var out []callLine
	for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
		tool := text[m[2]:m[3]]
		dec := json.NewDecoder(strings.NewReader(text[m[4]:]))
		var args map[string]any
		if err := dec.Decode(&args); err != nil {
			continue
		}
		raw := text[m[4] : m[4]+int(dec.InputOffset())]
		out = append(out, callLine{Tool: tool, Args: args, Raw: raw})
	}
	return out
}

// callAfter returns the first visible call of tool after the line prefix
// (e.g. "next: "), or false.
func callAfter(text, prefix string) (callLine, bool) {
	i := strings.Index(text, prefix)
	if i < 0 {
		return callLine{}, false
	}
	calls := visibleCalls(text[i+len(prefix):])
	if len(calls) == 0 {
		return callLine{}, false
	}
	// The call must start right after the prefix.
	rest := strings.TrimLeft(text[i+len(prefix):], " ")
	if !strings.HasPrefix(rest, calls[0].Tool+" ") {
		return callLine{}, false
	}
	return calls[0], true
}

// continuation extracts {tool, arguments} from a structured continuation.
func continuation(v any) (string, map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", nil, false
	}
	tool, _ := m["tool"].(string)
	args, _ := m["arguments"].(map[string]any)
	return tool, args, tool != "" && args != nil
}

package pdpp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// journeyReport is the committed record of what the model receives: bytes
// of initialize, tools/list and a typical search -> fetch -> read journey.
// go test ./internal/pdpp -run TestFootprintJourney -update rewrites it.
const journeyReport = "../../docs/footprint-journey.md"

// The ceilings: the budgets in spec/tools.yaml may be lower, never
// higher. The first two hold at every revision up to 2025-11-25, the
// others at 2026-07-28, which adds resultType, cache hints and the server's
// identity to tools/list.
const (
	ceilingAllTools       = 15232
	ceilingReadOnly       = 10112
	ceilingAllToolsNewest = 16 << 10
	ceilingReadOnlyNewest = 10 << 10
)

// readTools are the catalog's read toolset, the --toolsets read surface, sorted.
var readTools = catalogNames([]string{"read"})

// fpClient is an initialized in-process MCP client of a real server built by
// pdpp.NewServer over an RS at rsURL, exposing toolsets (nil: all).
type fpClient struct {
	c    *client.Client
	init *mcp.InitializeResult
	seq  int64
}

func newFPClient(t testing.TB, rsURL, token string, toolsets []string) *fpClient {
	t.Helper()
	source := func(context.Context) (string, error) { return token, nil }
	rsClient, err := rs.New(rsURL, source, rs.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("rs.New: %v", err)
	}
	s := pdpp.NewServer(pdpp.New(pdpp.Config{RS: rsClient, Token: source}), pdpp.ServerOptions{Version: "footprint", Toolsets: toolsets})
	c, ir := startInProcess(t, s, "pdpp-footprint-test")
	return &fpClient{c: c, init: ir}
}

// raw sends one JSON-RPC request and returns the result bytes exactly as the
// server serialized them.
func (f *fpClient) raw(t testing.TB, method string, params any) json.RawMessage {
	t.Helper()
	f.seq++
	resp, err := f.c.GetTransport().SendRequest(context.Background(), transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(5000 + f.seq), Method: method, Params: params,
	})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if resp.Error != nil {
		t.Fatalf("%s: JSON-RPC error %d %s", method, resp.Error.Code, resp.Error.Message)
	}
	return resp.Result
}

// servedTool is one tools/list entry as served, with every description a
// client reads in it.
type servedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Input       json.RawMessage `json:"inputSchema"`
	Output      json.RawMessage `json:"outputSchema"`
}

// fieldDescriptions returns the property descriptions of a schema, by
// property name.
func fieldDescriptions(t testing.TB, schema json.RawMessage) map[string]string {
	t.Helper()
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if len(schema) > 0 {
		if err := json.Unmarshal(schema, &s); err != nil {
			t.Fatalf("schema: %v", err)
		}
	}
	out := map[string]string{}
	for name, p := range s.Properties {
		out[name] = p.Description
	}
	return out
}

// servedTools lists the tools a client sees, decoded from the raw answer.
func (f *fpClient) servedTools(t testing.TB) (json.RawMessage, []servedTool) {
	t.Helper()
	raw := f.raw(t, "tools/list", map[string]any{})
	var list struct {
		Tools []servedTool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	return raw, list.Tools
}

func toolNames(tools []servedTool) []string {
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestServedFootprint builds the real server over the demo RS and checks
// what a client receives: the tools/list size of every exposure against the
// catalog budgets (and the budgets against the ceilings), and the
// default exposure listing every catalog tool.
func TestServedFootprint(t *testing.T) {
	demo := newDemoHarness(t, tokClient)
	tests := []struct {
		name     string
		toolsets []string
		budget   int
		ceiling  int
		want     []string
	}{
		{"default (all toolsets)", nil, mcptools.MaxToolsListBytes, ceilingAllTools, catalogNames(nil)},
		{"read only", []string{"read"}, mcptools.ToolsetListBudget("read"), ceilingReadOnly, readTools},
		{"read and events", []string{"read", "events"}, mcptools.MaxToolsListBytes, ceilingAllTools, catalogNames(nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.budget <= 0 || tc.budget > tc.ceiling {
				t.Fatalf("catalog budget %d bytes is missing or above the ceiling %d", tc.budget, tc.ceiling)
			}
			f := newFPClient(t, demo.rsURL, tokClient, tc.toolsets)
			raw, tools := f.servedTools(t)
			if len(raw) > tc.budget {
				t.Errorf("tools/list is %d bytes, budget %d", len(raw), tc.budget)
			}
			if got := toolNames(tools); !slices.Equal(got, tc.want) {
				t.Errorf("tools = %v, want %v", got, tc.want)
			}
			for _, tool := range tools {
				checkPortableSchema(t, tool.Name+" inputSchema", tool.Input)
				checkPortableSchema(t, tool.Name+" outputSchema", tool.Output)
			}
			t.Logf("tools/list: %d tools, %d bytes (budget %d)", len(tools), len(raw), tc.budget)
		})
	}
}

// checkPortableSchema fails on the schema keywords some clients reject:
// $ref, $defs and $schema anywhere, a type array anywhere, anyOf/oneOf/allOf
// at the top, and a top-level type other than object.
func checkPortableSchema(t *testing.T, what string, raw json.RawMessage) {
	t.Helper()
	if len(raw) == 0 {
		t.Errorf("%s is missing", what)
		return
	}
	for _, kw := range []string{`"$ref"`, `"$defs"`, `"$schema"`} {
		if bytes.Contains(raw, []byte(kw)) {
			t.Errorf("%s contains %s", what, kw)
		}
	}
	// A type spelled as an array (["string","null"]) is read as one string
	// by several clients; MCP Inspector warns on it.
	if bytes.Contains(raw, []byte(`"type":[`)) {
		t.Errorf("%s spells a type as an array: %s", what, raw)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Errorf("%s is not an object: %v", what, err)
		return
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		if _, ok := top[kw]; ok {
			t.Errorf("%s has a top-level %s", what, kw)
		}
	}
	if string(top["type"]) != `"object"` {
		t.Errorf("%s type is %s, want \"object\"", what, top["type"])
	}
}

// catalogNames lists the catalog's tools of the given toolsets (nil: all),
// sorted.
func catalogNames(toolsets []string) []string {
	var names []string
	for _, tool := range mcptools.Tools() {
		if toolsets == nil || slices.Contains(toolsets, mcptools.Toolset(tool.Name)) {
			names = append(names, tool.Name)
		}
	}
	slices.Sort(names)
	return names
}

// instructionTopics are the parts of the core usage pattern the first
// characters of the instructions must explain; each matches when any of
// its words appears.
var instructionTopics = []struct {
	topic string
	words []string
}{
	{"grant-scoped access", []string{"grant-scoped", "grant"}},
	{"schema-first discovery", []string{"schema first", "call schema"}},
	{"connection_id disambiguation", []string{"connection_id"}},
	{"typed object filters", []string{"filter is a json object"}},
	{"bounded paging", []string{"cursor"}},
	{"page size", []string{"limit"}},
	{"narrowing", []string{"fields"}},
	{"owner tokens refused", []string{"never ask for owner"}},
}

// TestServedInstructions checks the instructions a client gets in
// initialize: present, the core pattern in the head, no request for owner
// or control-plane tokens, and the pointers the rest must carry.
func TestServedInstructions(t *testing.T) {
	demo := newDemoHarness(t, tokClient)
	f := newFPClient(t, demo.rsURL, tokClient, nil)
	ins := f.init.Instructions
	if strings.TrimSpace(ins) == "" {
		t.Fatal("initialize carries no instructions")
	}
	if ins != mcptools.Instructions {
		t.Fatal("served instructions differ from the catalog's")
	}
	n := mcptools.InstructionsHeadChars
	if n <= 0 || n > 512 {
		t.Fatalf("head window is %d characters, want at most 512", n)
	}
	head := strings.ToLower(ins)
	if utf8.RuneCountInString(ins) > n {
		head = strings.ToLower(string([]rune(ins)[:n]))
	}
	for _, topic := range instructionTopics {
		t.Run("head/"+topic.topic, func(t *testing.T) {
			if !slices.ContainsFunc(topic.words, func(w string) bool { return strings.Contains(head, w) }) {
				t.Errorf("first %d characters do not cover %s (any of %q)", n, topic.topic, topic.words)
			}
		})
	}
	for _, phrase := range mcptools.InstructionsMustMention() {
		if !strings.Contains(head, strings.ToLower(phrase)) {
			t.Errorf("first %d characters do not mention %q", n, phrase)
		}
	}
	lower := strings.ToLower(ins)
	for _, s := range splitSentences(lower) {
		if (strings.Contains(s, "owner") || strings.Contains(s, "control-plane")) && !strings.Contains(s, "never") {
			t.Errorf("instructions mention owner or control-plane tokens without refusing them: %q", s)
		}
	}
	for _, want := range []string{"discover_event_subscription_capabilities", "read_record_field", "connection_id and the result id", "never a grant_id"} {
		if !strings.Contains(ins, want) {
			t.Errorf("instructions do not say %q", want)
		}
	}
}

// TestServedGuidanceNotRepeated reads the served tools/list and checks that
// no long sentence is said twice across tool and field descriptions, and
// that connection_id recovery and webhook signing/delivery guidance live
// only in their one home.
func TestServedGuidanceNotRepeated(t *testing.T) {
	demo := newDemoHarness(t, tokClient)
	f := newFPClient(t, demo.rsURL, tokClient, nil)
	_, tools := f.servedTools(t)

	type place struct{ owner, name, text string }
	places := []place{{"instructions", "instructions", f.init.Instructions}}
	for _, tool := range tools {
		places = append(places, place{tool.Name, tool.Name + " description", tool.Description})
		for kind, schema := range map[string]json.RawMessage{"arg": tool.Input, "output": tool.Output} {
			for name, d := range fieldDescriptions(t, schema) {
				places = append(places, place{tool.Name, tool.Name + " " + kind + " " + name, d})
			}
		}
	}
	slices.SortFunc(places, func(a, b place) int { return strings.Compare(a.name, b.name) })

	t.Run("long sentences", func(t *testing.T) {
		seen := map[string]string{}
		for _, p := range places {
			for _, s := range splitSentences(p.text) {
				if utf8.RuneCountInString(s) < mcptools.LongSentenceChars {
					continue
				}
				if prev, ok := seen[s]; ok && prev != p.name {
					t.Errorf("sentence said in %s and %s: %q", prev, p.name, s)
				}
				seen[s] = p.name
			}
		}
	})

	homes := mcptools.GuidanceHomes()
	// The seed's two cases must be covered by the catalog's homes.
	for phrase, home := range map[string]string{
		"ambiguous_connection": "instructions", "available_connections": "instructions",
		"webhook-signature": "discover_event_subscription_capabilities", "HMAC": "discover_event_subscription_capabilities",
	} {
		if homes[phrase] != home {
			t.Errorf("guidance %q has home %q, want %q", phrase, homes[phrase], home)
		}
	}
	for phrase, home := range homes {
		t.Run("home/"+phrase, func(t *testing.T) {
			found := false
			for _, p := range places {
				if !strings.Contains(strings.ToLower(p.text), strings.ToLower(phrase)) {
					continue
				}
				if p.owner != home {
					t.Errorf("%q is said in %s; its home is %s", phrase, p.name, home)
				}
				found = true
			}
			if !found {
				t.Errorf("%q is said nowhere; its home %s should say it", phrase, home)
			}
		})
	}
	t.Run("connection_id guidance", func(t *testing.T) {
		var described []string
		for _, p := range places {
			if strings.Contains(p.name, " arg connection_id") && p.text != "" {
				described = append(described, p.text)
			}
		}
		if len(described) < 2 {
			t.Fatalf("want several tools taking connection_id, got %d", len(described))
		}
		for _, d := range described {
			if utf8.RuneCountInString(d) >= mcptools.LongSentenceChars {
				t.Errorf("connection_id argument description carries long guidance: %q", d)
			}
		}
	})
}

var sentenceEnd = regexp.MustCompile(`[.!?;]\s+|\n+`)

// splitSentences splits text at sentence ends and line breaks, collapsing
// white space.
func splitSentences(text string) []string {
	var out []string
	for _, s := range sentenceEnd.Split(text, -1) {
		s = strings.Join(strings.Fields(strings.TrimRight(s, ".!?;")), " ")
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// journeyStep is one measured result of the model-side journey.
type journeyStep struct {
	what                        string
	result, content, structured int
}

// toolBytes calls a tool over raw JSON-RPC and measures its result: the
// whole result, the text of content[], and structuredContent.
func (f *fpClient) toolBytes(t testing.TB, tool string, args map[string]any) (journeyStep, map[string]any, string) {
	t.Helper()
	raw := f.raw(t, "tools/call", map[string]any{"name": tool, "arguments": args})
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Structured json.RawMessage `json:"structuredContent"`
		IsError    bool            `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		text.WriteString(c.Text)
	}
	if res.IsError {
		t.Fatalf("%s %v failed: %s", tool, args, text.String())
	}
	var structured map[string]any
	if err := json.Unmarshal(res.Structured, &structured); err != nil {
		t.Fatalf("%s: structuredContent: %v", tool, err)
	}
	argText, _ := json.Marshal(args)
	step := journeyStep{
		what:       fmt.Sprintf("`%s %s`", tool, argText),
		result:     len(raw),
		content:    len(text.String()),
		structured: len(res.Structured),
	}
	return step, structured, text.String()
}

// TestFootprintJourney measures the model's side of a session and compares
// it with docs/footprint-journey.md; a change in any figure fails until the
// report is refreshed with -update, so regressions show in review.
func TestFootprintJourney(t *testing.T) {
	demo := newDemoHarness(t, tokClient)
	var steps []journeyStep
	sizes := map[string]int{}
	for _, exp := range []struct {
		name     string
		toolsets []string
	}{{"all", nil}, {"read", []string{"read"}}} {
		f := newFPClient(t, demo.rsURL, tokClient, exp.toolsets)
		init := f.raw(t, "initialize", map[string]any{
			"protocolVersion": mcp.LATEST_PROTOCOL_VERSION,
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]any{"name": "pdpp-footprint-test", "version": "0"},
		})
		sizes["initialize"] = len(init)
		list, _ := f.servedTools(t)
		sizes["tools/list "+exp.name] = len(list)
		sizes["resources/templates/list"] = len(f.raw(t, "resources/templates/list", map[string]any{}))
	}

	f := newFPClient(t, demo.rsURL, tokClient, []string{"read"})
	search, found, _ := f.toolBytes(t, "search", map[string]any{"q": "zephyrmarker", "streams": []string{"transcripts"}, "limit": 5})
	steps = append(steps, search)
	results, _ := found["results"].([]any)
	if len(results) == 0 {
		t.Fatalf("search found nothing: %v", found)
	}
	hit, _ := results[0].(map[string]any)
	id, _ := hit["id"].(string)
	if id == "" {
		t.Fatalf("first hit has no id: %v", hit)
	}
	fetch, _, _ := f.toolBytes(t, "fetch", map[string]any{"id": id})
	steps = append(steps, fetch)
	read, _, _ := f.toolBytes(t, "read_record_field", map[string]any{"id": id, "field_path": "text", "q": "zephyrmarker"})
	steps = append(steps, read)

	worst := worstReplies(t, demo, f)
	report := renderJourney(sizes, steps) + renderWorst(worst)
	if *update {
		if err := os.WriteFile(journeyReport, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(journeyReport)
	if err != nil {
		t.Fatalf("read %s (create it with -update): %v", journeyReport, err)
	}
	if !bytes.Equal(want, []byte(report)) {
		t.Fatalf("measured footprint differs from %s; review the change and run\n  go test ./internal/pdpp -run TestFootprintJourney -update\n%s",
			journeyReport, lineDiff(string(want), report))
	}
}

func renderJourney(sizes map[string]int, steps []journeyStep) string {
	var b strings.Builder
	b.WriteString(`# Footprint of a session, as the model receives it

Measured by ` + "`TestFootprintJourney`" + ` (internal/pdpp/footprint_test.go) against the
embedded demo RS, through an in-process MCP client of the real server. The
test fails when a figure changes; refresh this file with
` + "`go test ./internal/pdpp -run TestFootprintJourney -update`" + ` and review the diff.
Sizes are bytes of the JSON-RPC result as the server serialized it. The
generated per-tool and per-field breakdown is
[gen/mcptools/FOOTPRINT.md](../gen/mcptools/FOOTPRINT.md).

## Discovery

| message | bytes | budget |
|---|---:|---:|
`)
	fmt.Fprintf(&b, "| initialize result | %d | - |\n", sizes["initialize"])
	fmt.Fprintf(&b, "| tools/list result, all toolsets (default) | %d | %d |\n", sizes["tools/list all"], mcptools.MaxToolsListBytes)
	fmt.Fprintf(&b, "| tools/list result, `--toolsets read` | %d | %d |\n", sizes["tools/list read"], mcptools.ToolsetListBudget("read"))
	fmt.Fprintf(&b, "| resources/templates/list result | %d | - |\n", sizes["resources/templates/list"])
	fmt.Fprintf(&b, "| instructions (in initialize) | %d | - |\n", len(mcptools.Instructions))
	b.WriteString(`
## A typical read journey: search, then fetch the first hit, then read its matched window

| call | result bytes | content[] text bytes | structuredContent bytes |
|---|---:|---:|---:|
`)
	total := 0
	for _, s := range steps {
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", s.what, s.result, s.content, s.structured)
		total += s.result
	}
	fmt.Fprintf(&b, "| total | %d | | |\n", total)
	return b.String()
}

// lineDiff shows the lines that differ between two reports.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  file:     %s\n  measured: %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// worstReply is one tool's largest reply on the demo RS, in the default
// detail and in full.
type worstReply struct {
	tool, call    string
	compact, full int // bytes; full 0: the tool has no full detail
	budget        string
}

// worstReplies measures each read tool on the demo RS's longest records at
// its largest limit, once with the default detail and once with full.
func worstReplies(t *testing.T, demo *harness, f *fpClient) []worstReply {
	t.Helper()
	top := longestTranscripts(t, demo)[0]
	topID := top.conn + "/transcripts:" + top.id
	cases := []struct {
		tool       string
		args, full map[string]any
	}{
		{"schema", map[string]any{}, map[string]any{"stream": "transcripts", "detail": "full"}},
		{"query_records", map[string]any{"stream": "transcripts", "limit": 100}, nil},
		{"aggregate", map[string]any{"stream": "transcripts", "metric": "count", "group_by_time": "created_at", "granularity": "day", "limit": 100}, nil},
		{"search", map[string]any{"q": "review", "limit": 100}, nil},
		{"fetch", map[string]any{"id": topID}, nil},
		{"read_record_field", map[string]any{"id": topID, "field_path": "text", "limit_chars": 16384}, nil},
	}
	var out []worstReply
	for _, c := range cases {
		step, _, _ := f.toolBytes(t, c.tool, c.args)
		w := worstReply{tool: c.tool, call: step.what, compact: step.result}
		full := c.full
		if full == nil && c.tool != "aggregate" {
			full = withArg(c.args, "detail", "full")
		}
		if full != nil {
			fs, _, _ := f.toolBytes(t, c.tool, full)
			w.full = fs.result
		}
		if b, ok := mcptools.ResultBudgetOf(c.tool); ok {
			w.budget = fmt.Sprint(b.Bytes)
			if b.RSBodyRatio > 0 {
				w.budget = fmt.Sprintf("%g× the RS body (min %d)", b.RSBodyRatio, b.MinBytes)
			}
		}
		out = append(out, w)
	}
	return out
}

func renderWorst(rows []worstReply) string {
	var b strings.Builder
	b.WriteString(`
## Worst-case replies, default detail and full

Each read tool on the demo RS's longest records at its largest limit
(` + "`read_record_field`" + ` at the largest window). The default detail is
` + "`compact`" + `; ` + "`full`" + ` carries the RS data verbatim, held only to the
operator's ceiling (` + "`--full-max-bytes`" + `, 4 MiB by default; for ` + "`schema`" + `, full
is ` + "`detail: \"full\"`" + ` with a stream; ` + "`aggregate`" + ` has one form).

| tool | call | default reply bytes | budget | ` + "`full`" + ` reply bytes |
|---|---|---:|---:|---:|
`)
	for _, r := range rows {
		full := "-"
		if r.full > 0 {
			full = fmt.Sprint(r.full)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | %s | %s |\n", r.tool, r.call, r.compact, r.budget, full)
	}
	return b.String()
}

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
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// wireLines records the size of every newline-framed message a stdio
// client reads, so a test can measure each reply on the wire.
type wireLines struct {
	r       io.Reader
	mu      sync.Mutex
	partial int
	sizes   []int
}

func (w *wireLines) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range p[:n] {
		if b == '\n' {
			w.sizes = append(w.sizes, w.partial)
			w.partial = 0
			continue
		}
		w.partial++
	}
	return n, err
}

// last is the size of the last whole message read.
func (w *wireLines) last() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.sizes) == 0 {
		return 0
	}
	return w.sizes[len(w.sizes)-1]
}

// sdkStdio is the adapter served over stdio by the server's own stdio
// loop (transport.ServeStdio) on pipes, reading rsURL with the client
// token, and the official Go SDK client connected to it at the SDK's
// default protocol revision.
type sdkStdio struct {
	cs      *sdk.ClientSession
	wire    *wireLines
	schemas map[string]*jsonschema.Schema
}

func newSDKStdio(t *testing.T, rsURL string) *sdkStdio {
	t.Helper()
	source := func(context.Context) (string, error) { return tokClient, nil }
	rsClient, err := rs.New(rsURL, source, rs.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := pdpp.NewServer(pdpp.New(pdpp.Config{RS: rsClient, Token: source}), pdpp.ServerOptions{})
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- transport.ServeStdio(ctx, s, serverIn, serverOut, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() {
		cancel()
		_ = clientOut.Close()
		_ = serverOut.Close()
		<-done
	})
	wire := &wireLines{r: clientIn}
	cl := sdk.NewClient(&sdk.Implementation{Name: "pdpp-next-test", Version: "0"}, nil)
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	cs, err := cl.Connect(cctx, &sdk.IOTransport{Reader: io.NopCloser(wire), Writer: clientOut}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	list, err := cs.ListTools(cctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := &sdkStdio{cs: cs, wire: wire, schemas: map[string]*jsonschema.Schema{}}
	for _, tool := range list.Tools {
		raw, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		out.schemas[tool.Name] = compileSchema(t, tool.Name, raw)
	}
	return out
}

// stdioReply is one tool result as the SDK client got it.
type stdioReply struct {
	text       string
	structured map[string]any
	wire       int // bytes of the JSON-RPC message that carried it
}

// call calls tool over stdio and checks what every reply keeps: no error,
// structuredContent valid against the listed outputSchema.
func (s *sdkStdio) call(t *testing.T, tool string, args map[string]any) stdioReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, mustJSON(args), err)
	}
	var r stdioReply
	r.wire = s.wire.last()
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			r.text += tc.Text
		}
	}
	if res.IsError {
		t.Fatalf("%s %s: tool error:\n%s", tool, mustJSON(args), r.text)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateJSON(s.schemas[tool], string(raw)); err != nil {
		t.Errorf("%s %s: structuredContent does not validate against the listed outputSchema: %v", tool, mustJSON(args), err)
	}
	if err := json.Unmarshal(raw, &r.structured); err != nil {
		t.Fatal(err)
	}
	return r
}

// listKind says where a list tool's reply keeps its items.
type listKind struct {
	// all lists the ids of every item of a full reply, in order.
	all func(s map[string]any) []string
	// listed lists the ids a compact step keeps (shown and not shown).
	listed func(s map[string]any) []string
	// shown lists the ids a compact step shows with previews.
	shown func(s map[string]any) []string
}

// idsOf reads the member id of each object of list.
func idsOf(list any) []string {
	items, _ := list.([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		id, _ := m["id"].(string)
		out = append(out, id)
	}
	return out
}

var listKinds = map[string]listKind{
	"search": {
		all:    func(s map[string]any) []string { return idsOf(s["results"]) },
		listed: func(s map[string]any) []string { return idsOf(mapOf(s["content_ladder"])["records"]) },
		shown:  func(s map[string]any) []string { return idsOf(s["results"]) },
	},
	"query_records": {
		all:    func(s map[string]any) []string { return idsOf(s["records"]) },
		listed: func(s map[string]any) []string { return idsOf(s["records"]) },
		shown: func(s map[string]any) []string {
			// The compact records of data, named as records[] names them.
			n := len(listOf(mapOf(s["data"])["data"]))
			return idsOf(s["records"])[:n]
		},
	},
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }
func listOf(v any) []any         { l, _ := v.([]any); return l }

// cardRE finds the items a compact step shows in content[] text.
var cardRE = regexp.MustCompile(`(?m)^\[(\d+)\] id=(\S+)$`)

// TestNextWalksThePage drives the real server over stdio with the official
// Go SDK client against the demo RS. For each large page: the first
// compact step keeps the id of every item of the page in the RS's order;
// walking next from it, through structured output alone and through
// content[] text alone (both name the same next call at every step, so one
// walk serves both), visits exactly the items the same request returns
// at detail "full", in order; and every step fits the tool's budget on
// the wire and validates against the outputSchema.
func TestNextWalksThePage(t *testing.T) {
	demo := newDemoHarness(t, tokClient)
	s := newSDKStdio(t, demo.rsURL)
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"search", map[string]any{"q": "launch", "limit": 100}},
		{"search", map[string]any{"q": "review", "limit": 100, "mode": "hybrid"}},
		{"query_records", map[string]any{"stream": "transcripts", "limit": 100, "connection_id": connMain}},
		{"query_records", map[string]any{"stream": "transcripts", "limit": 100}},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+mustJSON(tc.args), func(t *testing.T) {
			kind := listKinds[tc.tool]
			budget, _ := mcptools.ResultBudgetOf(tc.tool)
			full := s.call(t, tc.tool, withArg(tc.args, "detail", "full"))
			want := kind.all(full.structured)
			first := s.call(t, tc.tool, tc.args)
			if got := kind.listed(first.structured); mustJSON(got) != mustJSON(want) {
				t.Fatalf("the first step keeps %d ids, full has %d: identity of every item must stay, in order", len(got), len(want))
			}
			if n := len(kind.shown(first.structured)); n == 0 || n >= len(want) {
				t.Fatalf("the first step shows %d of %d items: the page should not fit one step", n, len(want))
			}
			t.Logf("%d items; first step shows %d, %d bytes; full reply %d bytes (full_bytes %v)", len(want), len(kind.shown(first.structured)), first.wire, full.wire, first.structured["full_bytes"])

			// One walk serves both readers: at every step the next call
			// the text names is the one structured output names, so a
			// client following either makes the same calls and gets the
			// same steps; each reader's items are collected on its own.
			var walkedStructured, walkedText []string
			r := first
			for steps := 0; ; steps++ {
				if steps > len(want) {
					t.Fatal("next does not reach the end of the page")
				}
				if r.wire > budget.Bytes {
					t.Errorf("step %d is %d bytes on the wire, budget %d", steps, r.wire, budget.Bytes)
				}
				if pos, _ := r.structured["page_position"].(float64); int(pos) != len(walkedStructured) {
					t.Errorf("step %d starts at %v, %d items walked", steps, r.structured["page_position"], len(walkedStructured))
				}
				walkedStructured = append(walkedStructured, kind.shown(r.structured)...)
				for _, m := range cardRE.FindAllStringSubmatch(r.text, -1) {
					if m[1] != itoa(len(walkedText)+1) {
						t.Fatalf("card [%s] follows %d items", m[1], len(walkedText))
					}
					walkedText = append(walkedText, m[2])
				}
				tool, args, ok := continuation(r.structured["next"])
				textNext, textOK := callAfter(r.text, "next: ")
				if ok != textOK || (ok && (textNext.Tool != tool || mustJSON(textNext.Args) != mustJSON(args))) {
					t.Fatalf("step %d: structured next is %s %v (%v), the text's next line %s %v (%v): a reader of either must make the same call",
						steps, tool, mustJSON(args), ok, textNext.Tool, mustJSON(textNext.Args), textOK)
				}
				if !ok {
					break
				}
				if tool != tc.tool || !handles.IsPageCursor(args["cursor"].(string)) {
					t.Fatalf("next is %s %v, want %s with a page cursor", tool, args, tc.tool)
				}
				r = s.call(t, tool, args)
			}
			if mustJSON(walkedStructured) != mustJSON(want) {
				t.Errorf("walking next through structured output visited %d items, full has %d (or another order)", len(walkedStructured), len(want))
			}
			if mustJSON(walkedText) != mustJSON(want) {
				t.Errorf("walking the text's next lines visited %d items, full has %d (or another order)", len(walkedText), len(want))
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// pageRS is a scripted RS serving one records page and one search page
// built from the same items, which a test can change between calls.
type pageRS struct {
	mu    sync.Mutex
	items []string // record ids, in page order
}

func (p *pageRS) set(ids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.items = append([]string(nil), ids...)
}

func (p *pageRS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	ids := append([]string(nil), p.items...)
	p.mu.Unlock()
	// Each item is large enough that a compact step shows only some.
	body := strings.Repeat("evidence words ", 60)
	var b bytes.Buffer
	b.WriteString(`{"object":"list","has_more":false,"next_cursor":null,"data":[`)
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/search"):
			b.WriteString(`{"object":"search_result","record_key":` + mustJSON(id) + `,"stream":"notes","connection_id":"cin_a","matched_fields":["body"],` +
				`"evidence_excerpts":[{"field_path":"body","preview_text":` + mustJSON(id+" <mark>needle</mark> "+body) + `,"truncated":true}]}`)
		default:
			b.WriteString(`{"object":"record","id":` + mustJSON(id) + `,"stream":"notes","connection_id":"cin_a","data":{"title":` +
				mustJSON(id+" "+body[:150]) + `,"summary":` + mustJSON(body[:190]) + `,"tags":` + mustJSON(body[:180]) + `}}`)
		}
	}
	b.WriteString(`]}`)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b.Bytes())
}

// pageIDs are n ids "n00", "n01", ….
func pageIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%02d", i)
	}
	return out
}

// walkNext follows structured next from r to the end of its page and
// returns the ids of the items every step showed, in order.
func walkNext(t *testing.T, h *harness, r callResult) []string {
	t.Helper()
	kind := listKinds[r.Tool]
	var walked []string
	for steps := 0; ; steps++ {
		if steps > 100 {
			t.Fatal("next does not reach the end of the page")
		}
		walked = append(walked, kind.shown(r.Structured)...)
		tool, args, ok := continuation(r.Structured["next"])
		if !ok {
			return walked
		}
		r = h.mustOK(t, tool, args)
	}
}

// listIDs are the ids a reply of tool gives the records of the scripted
// page with ids.
func listIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "cin_a/notes:" + id
	}
	return out
}

// TestNextNoticesAChangedPage changes the scripted RS page between two
// steps. When the items before the resume position differ (one inserted
// or removed there), the next step says the page changed and shows it
// again from its first item, and walking on visits the new page whole;
// when only items after it changed, the step resumes where it was.
func TestNextNoticesAChangedPage(t *testing.T) {
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"search", map[string]any{"q": "needle", "limit": 100}},
		{"query_records", map[string]any{"stream": "notes", "limit": 100}},
	}
	changes := []struct {
		name    string
		page    func(old []string, shown int) []string
		restart bool
	}{
		{"item inserted before the position", func(old []string, _ int) []string { return append([]string{"new"}, old...) }, true},
		{"last shown item removed", func(old []string, shown int) []string {
			return append(append([]string(nil), old[:shown-1]...), old[shown:]...)
		}, true},
		{"shown items reordered", func(old []string, _ int) []string {
			out := append([]string(nil), old...)
			out[0], out[1] = out[1], out[0]
			return out
		}, true},
		{"item appended after the position", func(old []string, _ int) []string { return append(append([]string(nil), old...), "late") }, false},
		{"item after the position removed", func(old []string, _ int) []string { return old[:len(old)-1] }, false},
	}
	for _, c := range calls {
		for _, ch := range changes {
			t.Run(c.tool+"/"+ch.name, func(t *testing.T) {
				rsh := &pageRS{}
				old := pageIDs(40)
				rsh.set(old...)
				h := newHarness(t, faultyRS(rsh.ServeHTTP), tokClient)
				first := h.mustOK(t, c.tool, c.args)
				shown := len(listKinds[c.tool].shown(first.Structured))
				tool, args, ok := continuation(first.Structured["next"])
				if !ok || shown == 0 || shown >= len(old) {
					t.Fatalf("first step shows %d of %d with next %v", shown, len(old), first.Structured["next"])
				}
				page := ch.page(old, shown)
				rsh.set(page...)
				r := h.mustOK(t, tool, args)
				changed := r.Structured["page_changed"] == true
				said := strings.Contains(r.Text, "the page changed since that cursor was made")
				if changed != ch.restart || said != ch.restart {
					t.Fatalf("page_changed %v, text says so %t; want %t:\n%.600s", r.Structured["page_changed"], said, ch.restart, r.Text)
				}
				want := listIDs(page)
				if !ch.restart {
					want = want[shown:]
				} else if r.Structured["page_position"] != nil {
					t.Errorf("a restarted step starts at %v, want the first item", r.Structured["page_position"])
				}
				if got := walkNext(t, h, r); mustJSON(got) != mustJSON(want) {
					t.Errorf("walking on visited %v\nwant %v", got, want)
				}
			})
		}
	}
}

// TestNextRefusesContradictingArguments: a page cursor resumes only the
// call it was made for. Other arguments, an altered cursor, or a page
// cursor where the route has no paging, are refused with a typed error
// naming cursor before any RS data request; detail "full" with a page
// cursor returns the whole page it points into.
func TestNextRefusesContradictingArguments(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	first := h.mustOK(t, "search", map[string]any{"q": "launch", "limit": 100})
	_, next, ok := continuation(first.Structured["next"])
	if !ok {
		t.Fatalf("no next: %s", first.RawStruct)
	}
	cursor := next["cursor"].(string)
	query := h.mustOK(t, "query_records", map[string]any{"stream": "transcripts", "limit": 100, "connection_id": connMain})
	_, qnext, _ := continuation(query.Structured["next"])
	header, rsPart, _ := strings.Cut(strings.TrimPrefix(cursor, handles.PageCursorPrefix), "~")
	cases := []struct {
		name, tool string
		args       map[string]any
		code       string
	}{
		{"other q", "search", withArg(next, "q", "review"), "conflicting_arguments"},
		{"other limit", "search", withArg(next, "limit", 50), "conflicting_arguments"},
		{"other mode", "search", withArg(next, "mode", "semantic"), "conflicting_arguments"},
		{"added connection_id", "search", withArg(next, "connection_id", connMain), "conflicting_arguments"},
		{"added streams", "search", withArg(next, "streams", []string{"transcripts"}), "conflicting_arguments"},
		{"another tool's cursor", "search", withArg(next, "cursor", qnext["cursor"]), "conflicting_arguments"},
		{"wrapped RS cursor altered", "search", withArg(next, "cursor", handles.PageCursorPrefix+header+"~"+rsPart+"x"), "conflicting_arguments"},
		{"header altered", "search", withArg(next, "cursor", handles.PageCursorPrefix+"A"+header[1:]+"~"+rsPart), "invalid_cursor"},
		{"other stream", "query_records", withArg(qnext, "stream", "notes"), "conflicting_arguments"},
		{"other fields", "query_records", withArg(qnext, "fields", []string{"id"}), "conflicting_arguments"},
		{"RS-style cursor on the subscription list", "list_event_subscriptions", map[string]any{"cursor": "eyJvZmYiOjJ9"}, "invalid_cursor"},
		{"search cursor on the subscription list", "list_event_subscriptions", map[string]any{"cursor": cursor}, "conflicting_arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.log.reset()
			r := h.call(t, tc.tool, tc.args)
			if !r.Res.IsError || r.errorCode() != tc.code || r.errorObject()["param"] != "cursor" {
				t.Fatalf("isError %v code %q param %v, want %s for cursor:\n%.400s", r.Res.IsError, r.errorCode(), r.errorObject()["param"], tc.code, r.Text)
			}
			if reqs := h.log.matching(isDataPath); len(reqs) > 0 || len(h.log.matching(func(p string) bool { return strings.HasPrefix(p, "/v1/event") })) > 0 {
				t.Errorf("a refused cursor reached the RS: %v", reqs)
			}
		})
	}
	t.Run("detail full reads the page the cursor points into", func(t *testing.T) {
		whole := h.mustOK(t, "search", map[string]any{"q": "launch", "limit": 100, "detail": "full"})
		r := h.mustOK(t, "search", withArg(next, "detail", "full"))
		if got, want := idsOf(r.Structured["results"]), idsOf(whole.Structured["results"]); mustJSON(got) != mustJSON(want) {
			t.Errorf("full with a page cursor lists %d hits, the page has %d", len(got), len(want))
		}
	})
	t.Run("an RS cursor passed as it is still pages", func(t *testing.T) {
		a := h.mustOK(t, "query_records", map[string]any{"stream": "transcripts", "limit": 2, "connection_id": connMain})
		c, _ := a.Structured["next_cursor"].(string)
		if c == "" || handles.IsPageCursor(c) {
			t.Fatalf("next_cursor %q", c)
		}
		tool, args, ok := continuation(a.Structured["next"])
		if !ok || tool != "query_records" || args["cursor"] != c {
			t.Errorf("a page shown whole names the RS's next page as next: %v", a.Structured["next"])
		}
		b := h.mustOK(t, "query_records", map[string]any{"stream": "transcripts", "limit": 2, "connection_id": connMain, "cursor": c})
		if got := idsOf(b.Structured["records"]); len(got) != 2 || got[0] == idsOf(a.Structured["records"])[0] {
			t.Errorf("the RS cursor did not page: %v", got)
		}
	})
}

// readOnRE finds a cut text value in content[] text: its field, the part
// shown, and the read_record_field call that reads on.
var readOnRE = regexp.MustCompile(`(?m)^\s*(\w+): (.*)… \[(\d+) chars in all; read on: (read_record_field \{[^\n]*\})\]$`)

// TestReadOnStartsWherePreviewStops: every "read on" continuation that a
// cut text value shows (fetch's text, query_records' cards) starts at the
// character where its preview stopped, and the window it reads is the
// field's text from there.
func TestReadOnStartsWherePreviewStops(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	id := connMain + "/transcripts:tr-5"
	ref, _ := handles.ParseID(id)
	field := h.fullField(t, ref.ConnectionID, ref.Stream, ref.RecordID, "text")
	check := func(t *testing.T, shown string, args map[string]any) {
		t.Helper()
		offset, _ := args["offset_chars"].(float64)
		runes := []rune(field)
		if int(offset) <= 0 || int(offset) >= len(runes) {
			t.Fatalf("read on starts at %v of %d chars", args["offset_chars"], len(runes))
		}
		if got, want := strings.Fields(shown), strings.Fields(string(runes[:int(offset)])); mustJSON(got) != mustJSON(want) {
			t.Errorf("the preview is not the field's first %v chars", offset)
		}
		w := h.mustOK(t, "read_record_field", args)
		win := mapOf(w.Structured["window"])
		text := structuredWindowText(t, w)
		if win["start_chars"] != offset || !strings.HasPrefix(string(runes[int(offset):]), text) || text == "" {
			t.Errorf("the window starts at %v, not where the preview stopped (%v), or is not the field's text from there", win["start_chars"], offset)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"fetch", map[string]any{"id": id}},
		{"query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 1, "filter": map[string]any{"id": "tr-5"}}},
	} {
		t.Run(c.tool+" text", func(t *testing.T) {
			r := h.mustOK(t, c.tool, c.args)
			found := 0
			for _, m := range readOnRE.FindAllStringSubmatch(r.Text, -1) {
				if m[1] != "text" {
					continue
				}
				found++
				call, ok := callAfter(m[4], "")
				if !ok || call.Args["id"] != id || call.Args["field_path"] != "text" {
					t.Fatalf("read on is not a read of %s text: %s", id, m[4])
				}
				check(t, m[2], call.Args)
			}
			if found == 0 {
				t.Fatalf("no cut text value in:\n%s", r.Text)
			}
		})
	}
}

// TestLongIDsKeepTheirItems serves pages whose record ids are long (about
// 1 KB, 3.9 KB, and 9 KB, past what any tool takes back) over stdio with
// the official Go SDK client. Every compact step fits the tool's budget on
// the wire and shows at least one item in structured output (never a
// step without results while budget is left); walking next, through
// structured output and through content[] text, visits every item of the
// page in order: by its whole id, or, where an id cannot fit even alone,
// by that id shortened (a prefix ending in an ellipsis, with id_bytes).
func TestLongIDsKeepTheirItems(t *testing.T) {
	cases := []struct {
		tool   string
		n, len int
		args   map[string]any
	}{
		{"search", 40, 1000, map[string]any{"q": "needle", "limit": 100}},
		{"query_records", 40, 1000, map[string]any{"stream": "notes", "limit": 100}},
		{"search", 30, 3900, map[string]any{"q": "needle", "limit": 100}},
		{"query_records", 30, 3900, map[string]any{"stream": "notes", "limit": 100}},
		{"search", 6, 9000, map[string]any{"q": "needle", "limit": 100}},
		{"query_records", 6, 9000, map[string]any{"stream": "notes", "limit": 100}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %d ids of %d bytes", tc.tool, tc.n, tc.len), func(t *testing.T) {
			ids := make([]string, tc.n)
			for i := range ids {
				ids[i] = fmt.Sprintf("k%03d-", i) + strings.Repeat("x", tc.len-5)
			}
			rsh := &pageRS{}
			rsh.set(ids...)
			srv := httptest.NewServer(faultyRS(rsh.ServeHTTP))
			t.Cleanup(srv.Close)
			s := newSDKStdio(t, srv.URL)
			budget, _ := mcptools.ResultBudgetOf(tc.tool)
			want := listIDs(ids)
			// same reports whether the id a step shows stands for want.
			same := func(shown, want string, entry map[string]any) bool {
				if shown == want {
					return true
				}
				prefix, cut := strings.CutSuffix(shown, "…")
				n, _ := entry["id_bytes"].(float64)
				return cut && strings.HasPrefix(want, prefix) && int(n) == len(want) && len(want) > handles.MaxInputBytes
			}
			kind := listKinds[tc.tool]
			t.Run("structured only", func(t *testing.T) {
				var walked int
				r := s.call(t, tc.tool, tc.args)
				for steps := 0; ; steps++ {
					if steps > len(want) {
						t.Fatal("next does not reach the end of the page")
					}
					if r.wire > budget.Bytes {
						t.Errorf("step %d is %d bytes on the wire, budget %d", steps, r.wire, budget.Bytes)
					}
					if r.structured["structured_bytes"] != nil {
						t.Fatalf("step %d left its structured output out: %.300s", steps, r.text)
					}
					shown := kind.shown(r.structured)
					if len(shown) == 0 {
						t.Fatalf("step %d shows no item in structured output: %.400s", steps, mustJSON(r.structured))
					}
					entries := listOf(r.structured["results"])
					if tc.tool == "query_records" {
						entries = listOf(mapOf(r.structured["data"])["data"])
					}
					for i, id := range shown {
						if walked+i >= len(want) || !same(id, want[walked+i], mapOf(entries[i])) {
							t.Fatalf("step %d shows %.40q… as item %d, want %.40q…", steps, id, walked+i, want[min(walked+i, len(want)-1)])
						}
					}
					walked += len(shown)
					tool, args, ok := continuation(r.structured["next"])
					if !ok {
						break
					}
					r = s.call(t, tool, args)
				}
				if walked != len(want) {
					t.Errorf("walking next visited %d items, the page has %d", walked, len(want))
				}
			})
			t.Run("content only", func(t *testing.T) {
				var walked int
				r := s.call(t, tc.tool, tc.args)
				for steps := 0; ; steps++ {
					if steps > len(want) {
						t.Fatal("next does not reach the end of the page")
					}
					for _, m := range cardRE.FindAllStringSubmatch(r.text, -1) {
						if m[1] != itoa(walked+1) || walked >= len(want) ||
							(m[2] != want[walked] && !strings.HasPrefix(want[walked], strings.TrimSuffix(m[2], "…"))) {
							t.Fatalf("card [%s] %.40q… follows %d items", m[1], m[2], walked)
						}
						walked++
					}
					next, ok := callAfter(r.text, "next: ")
					if !ok {
						break
					}
					r = s.call(t, next.Tool, next.Args)
				}
				if walked != len(want) {
					t.Errorf("walking the text's next lines visited %d items, the page has %d", walked, len(want))
				}
			})
		})
	}
}

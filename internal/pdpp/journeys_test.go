package pdpp_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// maxHops bounds every continuation walk so a broken chain fails fast.
const maxHops = 40

// windowView is one field window as a journey sees it.
type windowView struct {
	start, end, total int
	text              string
	next, previous    *callLine
}

var windowHeaderRE = regexp.MustCompile(`chars (\d+)-(\d+) of (\d+)`)

// windowFromText reads a window using content[] text only.
func windowFromText(t *testing.T, text string) windowView {
	t.Helper()
	m := windowHeaderRE.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("window text has no served range:\n%.400s", text)
	}
	var w windowView
	w.start, _ = strconv.Atoi(m[1])
	w.end, _ = strconv.Atoi(m[2])
	w.total, _ = strconv.Atoi(m[3])
	const sep = "\n---\n"
	i, j := strings.Index(text, sep), strings.LastIndex(text, sep)
	if i < 0 || j <= i {
		t.Fatalf("window text has no delimited body:\n%.400s", text)
	}
	w.text = text[i+len(sep) : j]
	tail := text[j+len(sep):]
	if c, ok := callAfter(tail, "next: "); ok {
		w.next = &c
	}
	if c, ok := callAfter(tail, "previous: "); ok {
		w.previous = &c
	}
	return w
}

// windowFromStructured reads a window using structuredContent only. A
// compact window keeps its text in content[] and names the full-detail
// call of the same window, whose structuredContent carries the text: a
// client that reads nothing else makes that call.
func windowFromStructured(t *testing.T, h *harness, s map[string]any) windowView {
	t.Helper()
	win, _ := s["window"].(map[string]any)
	num := func(k string) int {
		f, ok := win[k].(float64)
		if !ok {
			t.Fatalf("window.%s missing: %v", k, win)
		}
		return int(f)
	}
	w := windowView{start: num("start_chars"), end: num("end_chars"), total: num("total_chars")}
	text, ok := s["text"].(string)
	if !ok {
		tool, args, isCall := continuation(s["full"])
		if !isCall || tool != "read_record_field" || args["detail"] != "full" {
			t.Fatalf("window has no text and no full-detail call: %v", s)
		}
		full := h.mustOK(t, tool, args)
		fw, _ := full.Structured["window"].(map[string]any)
		if int(fw["start_chars"].(float64)) != w.start || int(fw["end_chars"].(float64)) != w.end {
			t.Fatalf("full-detail call served %v-%v, not the window %d-%d", fw["start_chars"], fw["end_chars"], w.start, w.end)
		}
		if text, ok = full.Structured["text"].(string); !ok {
			t.Fatalf("full-detail window carries no text: %v", full.Structured)
		}
	}
	w.text = text
	if tool, args, ok := continuation(s["next"]); ok {
		w.next = &callLine{Tool: tool, Args: args}
	}
	if tool, args, ok := continuation(s["previous"]); ok {
		w.previous = &callLine{Tool: tool, Args: args}
	}
	return w
}

// walkField starts from a first read_record_field call and reads the whole
// field: back along previous to offset 0, then forward along next to the
// end. It returns the forward windows' text joined.
func walkField(t *testing.T, h *harness, first callLine, view func(*testing.T, callResult) windowView) string {
	t.Helper()
	if first.Tool != "read_record_field" {
		t.Fatalf("first read is %s, want read_record_field", first.Tool)
	}
	read := func(c callLine) windowView {
		t.Helper()
		if c.Tool != "read_record_field" {
			t.Fatalf("continuation names %s, want read_record_field", c.Tool)
		}
		return view(t, h.mustOK(t, c.Tool, c.Args))
	}
	w := read(first)
	for hops := 0; w.start > 0; hops++ {
		if w.previous == nil || hops == maxHops {
			t.Fatalf("window at %d has no previous continuation", w.start)
		}
		p := read(*w.previous)
		if p.start >= w.start {
			t.Fatalf("previous went from %d to %d", w.start, p.start)
		}
		w = p
	}
	var b strings.Builder
	for hops := 0; ; hops++ {
		if hops == maxHops {
			t.Fatal("too many windows")
		}
		b.WriteString(w.text)
		if w.next == nil {
			if w.end != w.total {
				t.Fatalf("window %d-%d of %d has no next continuation", w.start, w.end, w.total)
			}
			break
		}
		n := read(*w.next)
		if n.start != w.end {
			t.Fatalf("next window starts at %d, previous ended at %d", n.start, w.end)
		}
		w = n
	}
	return b.String()
}

// TestJourneyContentOnly follows the evidence ladder reading nothing but
// content[] text, as a host that hides structuredContent would.
func TestJourneyContentOnly(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	searches := []struct {
		name string
		args map[string]any
	}{
		{"long transcript", map[string]any{"q": "needle5", "streams": []string{"transcripts"}}},
		{"short note body", map[string]any{"q": "lighthouse", "streams": []string{"notes"}}},
	}
	for _, sc := range searches {
		t.Run(sc.name, func(t *testing.T) {
			s := h.mustOK(t, "search", sc.args)
			m := regexp.MustCompile(`first_fetch_id=(\S+)`).FindStringSubmatch(s.Text)
			if m == nil {
				t.Fatalf("no first_fetch_id in text:\n%s", s.Text)
			}
			id := m[1]
			var read *callLine
			for _, c := range visibleCalls(s.Text) {
				if c.Tool == "read_record_field" && c.Args["id"] == id {
					read = &c
					break
				}
			}
			if read == nil {
				t.Fatalf("no read_record_field call for %s in text:\n%s", id, s.Text)
			}
			got := walkField(t, h, *read, func(t *testing.T, r callResult) windowView { return windowFromText(t, r.Text) })
			ref, err := handles.ParseID(id)
			if err != nil {
				t.Fatal(err)
			}
			field, _ := read.Args["field_path"].(string)
			want := h.fullField(t, ref.ConnectionID, ref.Stream, ref.RecordID, field)
			if got != want {
				t.Errorf("windows read from text (%d chars) differ from the field (%d chars)", len([]rune(got)), len([]rune(want)))
			}
		})
	}
}

// TestJourneyStructuredOnly follows the same ladder using only
// structuredContent.
func TestJourneyStructuredOnly(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	s := h.mustOK(t, "search", map[string]any{"q": "needle7", "streams": []string{"transcripts"}})
	results, _ := s.Structured["results"].([]any)
	if len(results) == 0 {
		t.Fatal("no results")
	}
	for i, res := range results {
		res := res.(map[string]any)
		t.Run(res["id"].(string), func(t *testing.T) {
			tool, args, ok := continuation(res["next"])
			if !ok {
				t.Fatalf("results[%d].next is not a continuation: %v", i, res["next"])
			}
			ladder := s.Structured["content_ladder"].(map[string]any)["records"].([]any)[i].(map[string]any)
			if ladder["id"] != res["id"] {
				t.Errorf("content_ladder.records[%d] is %v, results[%d] is %v", i, ladder["id"], i, res["id"])
			}
			if ladder["next"] != nil { // full detail repeats the next read in the ladder
				if ltool, largs, _ := continuation(ladder["next"]); ltool != tool || mustJSON(largs) != mustJSON(args) {
					t.Errorf("content_ladder.records[%d].next differs from results[%d].next", i, i)
				}
			}
			got := walkField(t, h, callLine{Tool: tool, Args: args}, func(t *testing.T, r callResult) windowView {
				return windowFromStructured(t, h, r.Structured)
			})
			ref, _ := handles.ParseID(res["id"].(string))
			want := h.fullField(t, ref.ConnectionID, ref.Stream, ref.RecordID, args["field_path"].(string))
			if got != want {
				t.Errorf("windows read from structured output (%d chars) differ from the field (%d chars)", len([]rune(got)), len([]rune(want)))
			}
		})
	}
}

// TestJourneyResourceAware reads the record and field windows through
// resources/read, as a host that supports MCP resources would.
func TestJourneyResourceAware(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	s := h.mustOK(t, "search", map[string]any{"q": "needle5", "streams": []string{"transcripts"}})
	results, _ := s.Structured["results"].([]any)
	if len(results) == 0 {
		t.Fatal("no results")
	}
	id := results[0].(map[string]any)["id"].(string)
	ref, err := handles.ParseID(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("record resource equals fetch", func(t *testing.T) {
		uri := handles.RecordURI(ref)
		fetched := h.mustOK(t, "fetch", map[string]any{"id": id})
		contents, err := h.readResource(t, uri)
		if err != nil {
			t.Fatalf("resources/read %s: %v", uri, err)
		}
		tc, ok := contents[0].(mcp.TextResourceContents)
		if !ok || !jsonEqual(t, []byte(tc.Text), withoutDetail(t, fetched.RawStruct)) {
			t.Errorf("record resource differs from fetch for %s", id)
		}
	})
	selectors := []struct {
		name string
		args map[string]any
	}{
		{"q window", map[string]any{"id": id, "field_path": "text", "q": "needle5"}},
		{"q window with context", map[string]any{"id": id, "field_path": "text", "q": "zephyrmarker", "before_chars": 50, "after_chars": 80}},
		{"first window", map[string]any{"id": id, "field_path": "text"}},
		{"offset window", map[string]any{"id": id, "field_path": "text", "offset_chars": 8192, "limit_chars": 2048}},
		{"last window", map[string]any{"id": id, "field_path": "text", "offset_chars": 20000}},
		{"stream and record_id", map[string]any{"stream": ref.Stream, "record_id": ref.RecordID, "connection_id": ref.ConnectionID, "field_path": "language"}},
	}
	for _, sel := range selectors {
		t.Run("field-window resource equals read_record_field/"+sel.name, func(t *testing.T) {
			r := h.mustOK(t, "read_record_field", sel.args)
			full := h.mustOK(t, "read_record_field", withArg(sel.args, "detail", "full"))
			uri, _ := r.Meta[pdpp.MetaFieldWindowURI].(string)
			if !strings.HasPrefix(uri, handles.FieldWindowURIPrefix) {
				t.Fatalf("_meta lacks the field-window URI: %v", r.Meta)
			}
			if strings.Contains(r.Text, uri) || strings.Contains(r.RawStruct, handles.FieldWindowURIPrefix) {
				t.Errorf("field-window URI leaked into model-visible output")
			}
			got := h.readResourceJSON(t, uri)
			if !jsonEqual(t, mustRaw(got), withoutDetail(t, full.RawStruct)) {
				t.Errorf("resource %s\n differs from tool %s", mustRaw(got), full.RawStruct)
			}
			// Following the resource's own next continuation through the tool
			// must work too.
			if tool, args, ok := continuation(got["next"]); ok {
				h.mustOK(t, tool, args)
			}
		})
	}
	t.Run("field-window resource is grant-scoped", func(t *testing.T) {
		videoWindow := handles.FieldWindowURI(handles.WindowRef{Record: handles.RecordRef{ConnectionID: connMain, Stream: "videos", RecordID: "vid-5"}, Field: "description"})
		if _, err := h.readResource(t, videoWindow); err != nil {
			t.Fatalf("client grant cannot read %s: %v", videoWindow, err)
		}
		h.token.Store(tokNarrow)
		defer h.token.Store(tokClient)
		_, err := h.readResource(t, videoWindow)
		if err == nil || !strings.Contains(err.Error(), "stream_not_allowed") {
			t.Errorf("narrow grant read a videos window through the resource: err = %v", err)
		}
		own := handles.FieldWindowURI(handles.WindowRef{Record: handles.RecordRef{ConnectionID: connMain, Stream: "transcripts", RecordID: "tr-5"}, Field: "text", Limit: 64})
		if _, err := h.readResource(t, own); err != nil {
			t.Errorf("narrow grant cannot read its own transcripts window: %v", err)
		}
	})
}

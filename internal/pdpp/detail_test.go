package pdpp_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
)

// structuredWindowText returns a read_record_field window's text as a
// client that reads structuredContent finds it: in `text` (detail full),
// or where `text_at` points in content[] (compact, where the text is paid
// for once).
func structuredWindowText(t testing.TB, r callResult) string {
	t.Helper()
	if s, ok := r.Structured["text"].(string); ok {
		return s
	}
	at, ok := r.Structured["text_at"].(map[string]any)
	if !ok {
		t.Fatalf("window has neither text nor text_at: %s", r.RawStruct)
	}
	idx, _ := at["content"].(float64)
	start, _ := at["start_byte"].(float64)
	end, _ := at["end_byte"].(float64)
	if int(idx) >= len(r.Res.Content) {
		t.Fatalf("text_at names content[%d] of %d", int(idx), len(r.Res.Content))
	}
	block := textBlock(t, r, int(idx))
	if int(start) < 0 || int(end) > len(block) || start > end {
		t.Fatalf("text_at %v is outside content[%d] (%d bytes)", at, int(idx), len(block))
	}
	return block[int(start):int(end)]
}

// textBlock returns the text of content[i].
func textBlock(t testing.TB, r callResult, i int) string {
	t.Helper()
	tc, ok := mcp.AsTextContent(r.Res.Content[i])
	if !ok {
		t.Fatalf("content[%d] is not text", i)
	}
	return tc.Text
}

// withoutDetail drops the members a tool result adds for its detail level
// (detail, and full's call), so it compares with the resource of the same
// record or window, which has no detail argument.
func withoutDetail(t testing.TB, raw string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "detail")
	delete(m, "full")
	return []byte(mustJSON(m))
}

// withArg returns a copy of args with k set to v.
func withArg(args map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(args)+1)
	for key, val := range args {
		out[key] = val
	}
	out[k] = v
	return out
}

// rawCall calls a tool over raw JSON-RPC and returns the result bytes as
// the server serialized them, with the decoded result.
func (h *harness) rawCall(t testing.TB, tool string, args map[string]any) (json.RawMessage, callResult) {
	t.Helper()
	raw := h.rawRequest("tools/call", map[string]any{"name": tool, "arguments": args})
	r := h.call(t, tool, args) // decoded, validated against the outputSchema
	if r.Res.IsError {
		t.Fatalf("%s %s failed:\n%s", tool, mustJSON(args), r.Text)
	}
	return raw, r
}

// transcript is one demo transcript: its connection, record id and text
// length in characters.
type transcript struct {
	conn, id string
	chars    int
}

// longestTranscripts lists every transcript of the demo RS read directly,
// longest text first.
func longestTranscripts(t testing.TB, h *harness) []transcript {
	t.Helper()
	var out []transcript
	for _, conn := range []string{connMain, connPeer} {
		status, body := h.rsGet(t, tokClient, "/v1/streams/transcripts/records?limit=100&connection_id="+conn)
		if status != 200 {
			t.Fatalf("RS list: %d %s", status, body)
		}
		var page struct {
			Data []struct {
				ID   string `json:"id"`
				Data struct {
					Text string `json:"text"`
				} `json:"data"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Data {
			out = append(out, transcript{conn, r.ID, len([]rune(r.Data.Text))})
		}
	}
	slices.SortFunc(out, func(a, b transcript) int { return b.chars - a.chars })
	return out
}

// TestResultBudgets proves the catalog's reply budgets on the demo RS's
// longest records at the largest limit each tool takes: the whole result
// as serialized (content[], structuredContent and _meta) stays within the
// budget, every result validates against its outputSchema, and a result
// that cut anything says so and names the full-detail call.
func TestResultBudgets(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	longest := longestTranscripts(t, h)
	if len(longest) < 10 || longest[0].chars < 24000 {
		t.Fatalf("demo RS lacks long transcripts: %v", longest[:min(3, len(longest))])
	}
	top := longest[0]
	topID := top.conn + "/transcripts:" + top.id
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"query_records", map[string]any{"stream": "transcripts", "limit": 100}},
		{"query_records", map[string]any{"stream": "transcripts", "limit": 100, "connection_id": connMain}},
		{"query_records", map[string]any{"stream": "notes", "limit": 100}},
		{"search", map[string]any{"q": "review", "limit": 100}},
		{"search", map[string]any{"q": "zephyrmarker", "limit": 100}},
		{"search", map[string]any{"q": "the", "limit": 100}},
		{"search", map[string]any{"q": "review", "limit": 100, "mode": "hybrid"}},
		{"schema", map[string]any{}},
		{"schema", map[string]any{"stream": "transcripts"}},
		{"aggregate", map[string]any{"stream": "transcripts", "metric": "count", "group_by": "language", "limit": 100}},
		{"aggregate", map[string]any{"stream": "transcripts", "metric": "count", "group_by_time": "created_at", "granularity": "day", "limit": 100}},
		{"fetch", map[string]any{"id": topID}},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+mustJSON(tc.args), func(t *testing.T) {
			budget, ok := mcptools.ResultBudgetOf(tc.tool)
			if !ok || budget.Bytes <= 0 {
				t.Fatalf("catalog declares no byte budget for %s", tc.tool)
			}
			raw, r := h.rawCall(t, tc.tool, tc.args)
			if len(raw) > budget.Bytes {
				t.Errorf("result is %d bytes, budget %d", len(raw), budget.Bytes)
			}
			checkTruncationReported(t, r)
			t.Logf("%d bytes (budget %d)", len(raw), budget.Bytes)
		})
	}
	t.Run("fetch every transcript", func(t *testing.T) {
		budget, _ := mcptools.ResultBudgetOf("fetch")
		for _, rec := range longest {
			raw, r := h.rawCall(t, "fetch", map[string]any{"id": rec.conn + "/transcripts:" + rec.id})
			if len(raw) > budget.Bytes {
				t.Errorf("fetch %s (%d chars) is %d bytes, budget %d", rec.id, rec.chars, len(raw), budget.Bytes)
			}
			checkTruncationReported(t, r)
		}
	})
	t.Run("read_record_field at the largest window", func(t *testing.T) {
		budget, _ := mcptools.ResultBudgetOf("read_record_field")
		for _, offset := range []int{0, 8000} {
			args := map[string]any{"id": topID, "field_path": "text", "limit_chars": evidence.MaxWindowChars, "offset_chars": offset}
			raw, r := h.rawCall(t, "read_record_field", args)
			_, body := h.rsGet(t, tokClient, fmt.Sprintf("/v1/streams/transcripts/records/%s/field-window?field=text&connection_id=%s&limit_chars=%d&offset_chars=%d",
				top.id, top.conn, evidence.MaxWindowChars, offset))
			if limit := budget.Limit(len(body)); len(raw) > limit {
				t.Errorf("offset %d: result is %d bytes, RS body %d, budget %d", offset, len(raw), len(body), limit)
			}
			if ratio := float64(len(raw)) / float64(len(body)); ratio > budget.RSBodyRatio {
				t.Errorf("offset %d: result is %.2f× the RS body, budget %.2f×", offset, ratio, budget.RSBodyRatio)
			} else {
				t.Logf("offset %d: %d bytes, %.2f× the RS body", offset, len(raw), ratio)
			}
			if r.Structured["text"] != nil {
				t.Errorf("compact window carries its text twice")
			}
		}
	})
}

// checkTruncationReported asserts the compact contract: a result that cut
// anything says truncated and names the full-detail call of the same tool.
func checkTruncationReported(t *testing.T, r callResult) {
	t.Helper()
	cut := r.Structured["truncated"] == true
	if !cut {
		return
	}
	if r.Tool == "aggregate" || r.Tool == "schema" {
		// No full detail to point at: the text says how to narrow the call.
		if !strings.Contains(r.Text, "narrow the call") {
			t.Errorf("%s: truncated result does not say how to narrow the call:\n%.400s", r.Tool, r.Text)
		}
		return
	}
	tool, args, ok := continuation(r.Structured["full"])
	if !ok || tool != r.Tool || args["detail"] != "full" {
		t.Errorf("%s: truncated result names no full-detail call: %v", r.Tool, r.Structured["full"])
	}
	if !strings.Contains(r.Text, `"detail":"full"`) && r.Tool != "fetch" {
		t.Errorf("%s: text does not name the full-detail call:\n%.400s", r.Tool, r.Text)
	}
}

// TestDetailFull checks the opt-in form: the RS data verbatim where the
// compact form previews it, each result still valid against its schema.
func TestDetailFull(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	top := longestTranscripts(t, h)[0]
	topID := top.conn + "/transcripts:" + top.id

	t.Run("query_records data equals the RS body", func(t *testing.T) {
		r := h.mustOK(t, "query_records", map[string]any{"stream": "transcripts", "limit": 100, "detail": "full"})
		ex, ok := h.log.last(isRecordsPath)
		if !ok {
			t.Fatal("records endpoint not called")
		}
		if !jsonEqual(t, mustRaw(r.Structured["data"]), ex.Body) {
			t.Errorf("full data differs from the RS body")
		}
		if r.Structured["truncated"] != nil {
			t.Errorf("full result reports truncation: %v", r.Structured["truncated"])
		}
	})
	t.Run("query_records compact names the same page in full", func(t *testing.T) {
		compact := h.mustOK(t, "query_records", map[string]any{"stream": "transcripts", "limit": 100, "connection_id": connMain})
		tool, args, ok := continuation(compact.Structured["full"])
		if !ok || tool != "query_records" {
			t.Fatalf("compact page names no full call: %v", compact.Structured["full"])
		}
		full := h.mustOK(t, tool, args)
		data, _ := full.Structured["data"].(map[string]any)
		list, _ := data["data"].([]any)
		if total := compact.Structured["items_total"]; float64(len(list)) != total {
			t.Errorf("full page has %d records, compact said %v", len(list), total)
		}
	})
	t.Run("query_records previews continue where they stop", func(t *testing.T) {
		r := h.mustOK(t, "query_records", map[string]any{"stream": "transcripts", "limit": 3, "connection_id": connMain})
		data, _ := r.Structured["data"].(map[string]any)
		recs, _ := data["data"].([]any)
		if len(recs) == 0 {
			t.Fatal("no records previewed")
		}
		rec, _ := recs[0].(map[string]any)
		fields, _ := rec["data"].(map[string]any)
		p, ok := fields["text"].(map[string]any)
		if !ok || p["truncated"] != true {
			t.Fatalf("long text is not a preview: %v", fields["text"])
		}
		preview, _ := p["preview"].(string)
		tool, args, ok := continuation(p["next"])
		if !ok {
			t.Fatalf("preview has no next call: %v", p)
		}
		next := h.mustOK(t, tool, args)
		w, _ := next.Structured["window"].(map[string]any)
		if int(w["start_chars"].(float64)) != len([]rune(preview)) {
			t.Errorf("next read starts at %v, preview has %d chars", w["start_chars"], len([]rune(preview)))
		}
		if int(p["chars"].(float64)) != int(w["total_chars"].(float64)) {
			t.Errorf("preview says %v chars, field has %v", p["chars"], w["total_chars"])
		}
	})
	t.Run("search full lists every hit", func(t *testing.T) {
		r := h.mustOK(t, "search", map[string]any{"q": "zephyrmarker", "limit": 100, "detail": "full"})
		ex, _ := h.log.last(func(p string) bool { return strings.HasPrefix(p, "/v1/search") })
		var page struct {
			Data []any `json:"data"`
		}
		_ = json.Unmarshal(ex.Body, &page)
		if got := len(r.Structured["results"].([]any)); got != len(page.Data) || got <= evidence.SearchCardsShown {
			t.Errorf("full search lists %d hits, RS returned %d", got, len(page.Data))
		}
	})
	t.Run("fetch full carries the RS record verbatim in data, once", func(t *testing.T) {
		want := h.fullField(t, top.conn, "transcripts", top.id, "text")
		r := h.mustOK(t, "fetch", map[string]any{"id": topID, "detail": "full"})
		ex, ok := h.log.last(isRecordsPath)
		if !ok {
			t.Fatal("record endpoint not called")
		}
		if !jsonEqual(t, mustRaw(r.Structured["data"]), ex.Body) {
			t.Errorf("full data differs from the RS body")
		}
		if text, _ := r.Structured["text"].(string); strings.Contains(text, want) || strings.Contains(r.Text, want) {
			t.Errorf("full fetch pays for the %d-char field twice (text or content[] repeats data)", len([]rune(want)))
		}
		if r.Structured["truncated"] != false || r.Structured["full"] != nil {
			t.Errorf("full fetch reports a cut or a full call: truncated=%v full=%v", r.Structured["truncated"], r.Structured["full"])
		}
	})
	t.Run("read_record_field full carries the text once", func(t *testing.T) {
		r := h.mustOK(t, "read_record_field", map[string]any{"id": topID, "field_path": "text", "detail": "full"})
		text, _ := r.Structured["text"].(string)
		if text == "" {
			t.Fatalf("full window has no text in structured output: %s", r.RawStruct)
		}
		if strings.Contains(r.Text, text) {
			t.Errorf("full window text is paid for twice (content[] repeats it)")
		}
		if !strings.Contains(r.Text, "structuredContent.text") {
			t.Errorf("content[] does not say where the window text is:\n%s", r.Text)
		}
		compact := h.mustOK(t, "read_record_field", map[string]any{"id": topID, "field_path": "text"})
		if got := structuredWindowText(t, compact); got != text {
			t.Errorf("compact and full windows differ")
		}
	})
}

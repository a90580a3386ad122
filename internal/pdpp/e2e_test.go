package pdpp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("not JSON: %v: %.200s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("not JSON: %v: %.200s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}

// lastData returns the body of the last data-endpoint answer the RS gave.
func lastData(t testing.TB, h *harness) exchange {
	t.Helper()
	ex, ok := h.log.last(isDataPath)
	if !ok {
		t.Fatalf("no data request reached the RS; requests: %v", h.log.requests())
	}
	return ex
}

func TestToolsListSurface(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	want := catalogNames([]string{"read"})
	if len(want) == 0 {
		t.Fatal("the catalog has no read toolset")
	}
	for _, name := range want {
		t.Run("tool/"+name, func(t *testing.T) {
			tool, ok := h.tools[name]
			if !ok {
				t.Fatalf("tools/list lacks %s", name)
			}
			if len(h.outputSchemas[name]) == 0 {
				t.Errorf("%s declares no outputSchema", name)
			}
			if tool.Title == "" || tool.Description == "" {
				t.Errorf("%s lacks a title or description", name)
			}
			if tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint {
				t.Errorf("%s is not marked read-only", name)
			}
		})
	}
	// The default exposure is every catalog tool, each in one of the catalog's
	// toolsets; the read toolset is the read-only tools above.
	if len(h.tools) != len(mcptools.Tools()) {
		t.Errorf("tools/list has %d tools, want the %d catalog tools", len(h.tools), len(mcptools.Tools()))
	}
	for name := range h.tools {
		if set := mcptools.Toolset(name); !slices.Contains(mcptools.Toolsets(), set) || (set == "read") != slices.Contains(want, name) {
			t.Errorf("tool %s is in toolset %q", name, set)
		}
	}
	t.Run("resource templates", func(t *testing.T) {
		res, err := h.client.ListResourceTemplates(context.Background(), mcp.ListResourceTemplatesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rt := range res.ResourceTemplates {
			got = append(got, rt.URITemplate.Raw())
		}
		for _, w := range []string{"pdpp://stream/{name}", "pdpp://record/{+handle}", "pdpp://field-window/{handle}", "pdpp://blob/{blob_id}"} {
			if !slices.Contains(got, w) {
				t.Errorf("resources/templates/list lacks %s (got %v)", w, got)
			}
		}
	})
	t.Run("initialize instructions", func(t *testing.T) {
		ins := h.init.Instructions
		if ins == "" {
			t.Fatal("initialize carries no instructions")
		}
		head := strings.ToLower(ins[:min(512, len(ins))])
		for _, w := range []string{"schema", "connection_id", "filter", "limit"} {
			if !strings.Contains(head, w) {
				t.Errorf("first 512 characters of instructions do not mention %q:\n%s", w, head)
			}
		}
		if !strings.Contains(head, "cursor") && !strings.Contains(head, "page") {
			t.Errorf("first 512 characters of instructions say nothing about paging:\n%s", head)
		}
		for _, sentence := range strings.Split(strings.ToLower(ins), ".") {
			if strings.Contains(sentence, "owner") && !strings.Contains(sentence, "never") && !strings.Contains(sentence, "not") {
				t.Errorf("instructions mention owner tokens without refusing them: %q", sentence)
			}
		}
	})
}

// TestOutputSchemaValidation proves the harness's outputSchema check can
// fail: results that break a tool's published schema are rejected.
func TestOutputSchemaValidation(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	bad := []struct {
		tool, instance string
	}{
		{"search", `{"results": {}, "has_more": "yes"}`},
		{"query_records", `{"records": "none"}`},
		{"read_record_field", `{"window": [], "next": 3}`},
		{"fetch", `{"id": 7}`},
		{"schema", `{"data": "text"}`},
		{"aggregate", `{"data": []}`},
	}
	for _, b := range bad {
		t.Run(b.tool, func(t *testing.T) {
			s := h.schemas[b.tool]
			if s == nil {
				t.Fatalf("no compiled outputSchema for %s", b.tool)
			}
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(b.instance))
			if err != nil {
				t.Fatal(err)
			}
			if s.Validate(inst) == nil {
				t.Errorf("%s outputSchema accepts %s", b.tool, b.instance)
			}
		})
	}
}

// TestToolsHappyPath calls every tool over MCP against the demo RS; every
// structuredContent is validated against the tool's outputSchema by call.
func TestToolsHappyPath(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	trMain := connMain + "/transcripts:tr-5"
	cases := []struct {
		name  string
		tool  string
		args  map[string]any
		check func(t *testing.T, r callResult)
	}{
		{"schema compact", "schema", map[string]any{}, func(t *testing.T, r callResult) {
			ex := h.lastSchema(t)
			if !jsonEqual(t, mustRaw(r.Structured["data"]), ex.Body) {
				t.Errorf("structured data is not the RS schema document")
			}
			for _, w := range []string{"videos", "transcripts", "notes", connMain, connPeer, connNotes, "expand: video"} {
				if !strings.Contains(r.Text, w) {
					t.Errorf("schema text lacks %q:\n%s", w, r.Text)
				}
			}
		}},
		{"schema full for one stream", "schema", map[string]any{"stream": "transcripts", "detail": "full"}, func(t *testing.T, r callResult) {
			ex := h.lastSchema(t)
			if !strings.Contains(ex.Query, "stream=transcripts") || strings.Contains(ex.Query, "view=compact") {
				t.Errorf("detail=full read %s", ex.Line)
			}
			if !jsonEqual(t, mustRaw(r.Structured["data"]), ex.Body) {
				t.Errorf("structured data is not the RS schema document")
			}
		}},
		{"query_records page", "query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 3, "fields": []string{"id", "language"}}, func(t *testing.T, r callResult) {
			ex := lastData(t, h)
			if !jsonEqual(t, mustRaw(r.Structured["data"]), ex.Body) {
				t.Errorf("structured data is not the RS page verbatim")
			}
			var page struct {
				NextCursor string `json:"next_cursor"`
			}
			_ = json.Unmarshal(ex.Body, &page)
			ids := recordIDs(t, ex.Body)
			records, _ := r.Structured["records"].([]any)
			if len(records) != len(ids) || len(ids) != 3 {
				t.Fatalf("records = %d, RS ids = %v", len(records), ids)
			}
			for i, rec := range records {
				m, _ := rec.(map[string]any)
				if m["id"] != ids[i] {
					t.Errorf("records[%d].id = %v, want %s", i, m["id"], ids[i])
				}
				if !strings.Contains(r.Text, "id="+ids[i]) {
					t.Errorf("text lacks id=%s", ids[i])
				}
			}
			if r.Structured["next_cursor"] != page.NextCursor || page.NextCursor == "" {
				t.Errorf("next_cursor = %v, RS = %q", r.Structured["next_cursor"], page.NextCursor)
			}
		}},
		{"aggregate grouped", "aggregate", map[string]any{"stream": "transcripts", "metric": "count", "group_by": "language"}, func(t *testing.T, r callResult) {
			ex := lastData(t, h)
			if !jsonEqual(t, mustRaw(r.Structured["data"]), ex.Body) {
				t.Errorf("structured data is not the RS aggregation verbatim")
			}
			var agg struct {
				Groups []struct {
					Key   any `json:"key"`
					Count int `json:"count"`
				} `json:"groups"`
			}
			_ = json.Unmarshal(ex.Body, &agg)
			if len(agg.Groups) == 0 {
				t.Fatalf("RS returned no groups: %s", ex.Body)
			}
			for _, g := range agg.Groups {
				if line := fmt.Sprintf("%v: %d", g.Key, g.Count); !strings.Contains(r.Text, line) {
					t.Errorf("text lacks group %q:\n%s", line, r.Text)
				}
			}
			if !strings.Contains(r.Text, "other_count") {
				t.Errorf("grouped text does not report other_count:\n%s", r.Text)
			}
		}},
		{"aggregate by month", "aggregate", map[string]any{"stream": "videos", "metric": "count", "group_by_time": "created_at", "granularity": "month", "connection_id": connMain}, func(t *testing.T, r callResult) {
			if !jsonEqual(t, mustRaw(r.Structured["data"]), lastData(t, h).Body) {
				t.Errorf("structured data is not the RS aggregation verbatim")
			}
			if !strings.Contains(r.Text, "2026-01") {
				t.Errorf("month buckets missing:\n%s", r.Text)
			}
		}},
		{"aggregate sum", "aggregate", map[string]any{"stream": "videos", "metric": "sum", "field": "duration_seconds", "connection_id": connMain}, func(t *testing.T, r callResult) {
			var agg struct {
				Value json.Number `json:"value"`
			}
			_ = json.Unmarshal(lastData(t, h).Body, &agg)
			if agg.Value == "" || !strings.Contains(r.Text, agg.Value.String()) {
				t.Errorf("sum %q not in text:\n%s", agg.Value, r.Text)
			}
		}},
		{"search lexical", "search", map[string]any{"q": "needle5", "streams": []string{"transcripts"}}, func(t *testing.T, r callResult) {
			hits := searchHitIDs(t, lastData(t, h).Body)
			results, _ := r.Structured["results"].([]any)
			if len(hits) == 0 || len(results) != len(hits) {
				t.Fatalf("results %d, RS hits %v", len(results), hits)
			}
			for i, res := range results {
				m, _ := res.(map[string]any)
				if m["id"] != hits[i] {
					t.Errorf("results[%d].id = %v, want %s", i, m["id"], hits[i])
				}
				if m["evidence_preview"] == nil || m["evidence_field"] != "text" {
					t.Errorf("results[%d] has no scalar evidence preview: %v", i, m)
				}
			}
			ladder, _ := r.Structured["content_ladder"].(map[string]any)
			recs, _ := ladder["records"].([]any)
			if len(recs) != len(hits) {
				t.Fatalf("content_ladder.records = %d, want %d", len(recs), len(hits))
			}
			for i, rec := range recs {
				// The evidence and its next read live once, in results[];
				// the ladder entry keeps the id and the fetch rung.
				m, _ := rec.(map[string]any)
				if m["id"] == nil || m["fetch"] == nil {
					t.Errorf("content_ladder.records[%d] lacks id or fetch: %v", i, m)
				}
			}
		}},
		{"search semantic", "search", map[string]any{"q": "weekly sync", "mode": "semantic", "limit": 2}, func(t *testing.T, r callResult) {
			ex := lastData(t, h)
			if ex.Path != "/v1/search/semantic" {
				t.Errorf("semantic search read %s", ex.Line)
			}
			hits := searchHitIDs(t, ex.Body)
			for _, id := range hits {
				if !strings.Contains(r.Text, "id="+id) {
					t.Errorf("text lacks id=%s", id)
				}
			}
			if len(hits) != 2 {
				t.Errorf("hits = %v", hits)
			}
		}},
		{"search hybrid", "search", map[string]any{"q": "zephyrmarker", "mode": "hybrid", "streams": []string{"transcripts"}, "limit": 2}, func(t *testing.T, r callResult) {
			if ex := lastData(t, h); ex.Path != "/v1/search/hybrid" {
				t.Errorf("hybrid search read %s", ex.Line)
			}
			if got := len(r.Structured["results"].([]any)); got != 2 {
				t.Errorf("results = %d", got)
			}
		}},
		{"fetch by self-contained id", "fetch", map[string]any{"id": trMain}, func(t *testing.T, r callResult) {
			checkFetchOf(t, h, r, trMain)
		}},
		{"fetch legacy id with connection_id", "fetch", map[string]any{"id": "transcripts:tr-5", "connection_id": connPeer}, func(t *testing.T, r callResult) {
			checkFetchOf(t, h, r, connPeer+"/transcripts:tr-5")
		}},
		{"fetch pdpp://record/ URI", "fetch", map[string]any{"id": handles.RecordURI(handles.RecordRef{ConnectionID: connMain, Stream: "transcripts", RecordID: "tr-5"})}, func(t *testing.T, r callResult) {
			checkFetchOf(t, h, r, trMain)
		}},
		{"fetch projected", "fetch", map[string]any{"id": trMain, "fields": []string{"id", "language"}}, func(t *testing.T, r callResult) {
			checkFetchOf(t, h, r, trMain)
			if ex := lastData(t, h); !strings.Contains(ex.Query, "fields=id%2Clanguage") {
				t.Errorf("projection not sent: %s", ex.Line)
			}
			if !strings.Contains(r.Text, "(whole record shown)") || strings.Contains(r.Text, "text:") {
				t.Errorf("projected small fetch not shown whole inline:\n%s", r.Text)
			}
			if strings.Contains(r.RawContent, "resource_link") {
				t.Errorf("projected small fetch emits a resource_link")
			}
		}},
		{"read_record_field first window", "read_record_field", map[string]any{"id": trMain, "field_path": "text"}, func(t *testing.T, r callResult) {
			full := h.fullField(t, connMain, "transcripts", "tr-5", "text")
			checkWindow(t, r, full, 0)
		}},
		{"read_record_field by stream and record_id", "read_record_field", map[string]any{"stream": "transcripts", "record_id": "tr-5", "connection_id": connPeer, "field_path": "text", "offset_chars": 100, "limit_chars": 300}, func(t *testing.T, r callResult) {
			full := h.fullField(t, connPeer, "transcripts", "tr-5", "text")
			checkWindow(t, r, full, 100)
			if r.Structured["id"] != connPeer+"/transcripts:tr-5" {
				t.Errorf("id = %v", r.Structured["id"])
			}
		}},
		{"read_record_field with record URI", "read_record_field", map[string]any{"id": handles.RecordURI(handles.RecordRef{ConnectionID: connNotes, Stream: "notes", RecordID: "note-4"}), "field_path": "body"}, func(t *testing.T, r callResult) {
			full := h.fullField(t, connNotes, "notes", "note-4", "body")
			checkWindow(t, r, full, 0)
			w, _ := r.Structured["window"].(map[string]any)
			if w["complete"] != true || r.Structured["next"] != nil {
				t.Errorf("small field not complete inline: %v", r.Structured)
			}
			if !strings.Contains(r.Text, "complete") {
				t.Errorf("small field text does not say it is complete:\n%s", r.Text)
			}
		}},
		{"read_record_field q window", "read_record_field", map[string]any{"id": trMain, "field_path": "text", "q": "needle5"}, func(t *testing.T, r callResult) {
			w, _ := r.Structured["window"].(map[string]any)
			ms, ok1 := w["match_start_chars"].(float64)
			me, ok2 := w["match_end_chars"].(float64)
			st, _ := w["start_chars"].(float64)
			if !ok1 || !ok2 {
				t.Fatalf("q window has no match offsets: %v", w)
			}
			text := structuredWindowText(t, r)
			runes := []rune(text)
			if got := string(runes[int(ms-st):int(me-st)]); got != "needle5" {
				t.Errorf("match offsets point at %q", got)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.mustOK(t, tc.tool, tc.args)
			tc.check(t, r)
		})
	}
	t.Run("query_records next page by cursor", func(t *testing.T) {
		first := h.mustOK(t, "query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 2, "fields": []string{"id"}})
		cursor, _ := first.Structured["next_cursor"].(string)
		if cursor == "" {
			t.Fatal("no next_cursor")
		}
		second := h.mustOK(t, "query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 2, "fields": []string{"id"}, "cursor": cursor})
		a, b := recordIDs(t, mustRaw(first.Structured["data"])), recordIDs(t, mustRaw(second.Structured["data"]))
		if len(b) != 2 || slices.Contains(a, b[0]) || slices.Contains(a, b[1]) {
			t.Errorf("second page %v repeats first page %v", b, a)
		}
	})
	t.Run("read_record_field by cursor", func(t *testing.T) {
		// The full detail names the next window as a cursor too; a compact
		// reply's continuations are next and previous only.
		first := h.mustOK(t, "read_record_field", map[string]any{"id": trMain, "field_path": "text", "limit_chars": 500, "detail": "full"})
		cursor, _ := first.Structured["next_cursor"].(string)
		if cursor == "" {
			t.Fatal("no next_cursor in a partial window at detail full")
		}
		if compact := h.mustOK(t, "read_record_field", map[string]any{"id": trMain, "field_path": "text", "limit_chars": 500}); compact.Structured["next_cursor"] != nil {
			t.Errorf("a compact window repeats next as next_cursor: %v", compact.Structured["next_cursor"])
		}
		second := h.mustOK(t, "read_record_field", map[string]any{"cursor": cursor, "field_path": "text"})
		full := h.fullField(t, connMain, "transcripts", "tr-5", "text")
		checkWindow(t, second, full, 500)
	})
}

// lastSchema returns the last /v1/schema exchange.
func (h *harness) lastSchema(t testing.TB) exchange {
	t.Helper()
	ex, ok := h.log.last(func(p string) bool { return p == "/v1/schema" })
	if !ok {
		t.Fatal("no schema request")
	}
	return ex
}

func mustRaw(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// recordIDs returns the self-contained ids of an RS records page.
func recordIDs(t testing.TB, body []byte) []string {
	t.Helper()
	var page struct {
		Data []struct {
			ID           string `json:"id"`
			Stream       string `json:"stream"`
			ConnectionID string `json:"connection_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("not a records page: %v", err)
	}
	var out []string
	for _, r := range page.Data {
		out = append(out, handles.RecordRef{ConnectionID: r.ConnectionID, Stream: r.Stream, RecordID: r.ID}.ID())
	}
	return out
}

// searchHitIDs returns the self-contained ids of an RS search page.
func searchHitIDs(t testing.TB, body []byte) []string {
	t.Helper()
	var page struct {
		Data []struct {
			RecordKey    string `json:"record_key"`
			Stream       string `json:"stream"`
			ConnectionID string `json:"connection_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("not a search page: %v", err)
	}
	var out []string
	for _, r := range page.Data {
		out = append(out, handles.RecordRef{ConnectionID: r.ConnectionID, Stream: r.Stream, RecordID: r.RecordKey}.ID())
	}
	return out
}

// checkFetchOf checks a fetch result names wantID and read that record.
func checkFetchOf(t *testing.T, h *harness, r callResult, wantID string) {
	t.Helper()
	if r.Structured["id"] != wantID {
		t.Errorf("fetch id = %v, want %s", r.Structured["id"], wantID)
	}
	if !strings.HasPrefix(r.Text, "id="+wantID) {
		t.Errorf("fetch text does not start with id=%s:\n%.300s", wantID, r.Text)
	}
	ref, _ := handles.ParseID(wantID)
	ex := lastData(t, h)
	if ex.Path != "/v1/streams/"+ref.Stream+"/records/"+ref.RecordID || !strings.Contains(ex.Query, "connection_id="+ref.ConnectionID) {
		t.Errorf("fetch read %s", ex.Line)
	}
}

// checkWindow checks a read_record_field result against the full field.
func checkWindow(t *testing.T, r callResult, full string, wantStart int) {
	t.Helper()
	w, _ := r.Structured["window"].(map[string]any)
	start, _ := w["start_chars"].(float64)
	end, _ := w["end_chars"].(float64)
	total, _ := w["total_chars"].(float64)
	text := structuredWindowText(t, r)
	runes := []rune(full)
	if int(total) != len(runes) {
		t.Errorf("total_chars = %v, field has %d", total, len(runes))
	}
	if int(start) != wantStart || int(end) > len(runes) || start > end {
		t.Fatalf("window %v-%v (want start %d) of %d", start, end, wantStart, len(runes))
	}
	if text != string(runes[int(start):int(end)]) {
		t.Errorf("window text is not field[%v:%v]", start, end)
	}
	if !strings.Contains(r.Text, text) {
		t.Errorf("content[] does not carry the window text inline")
	}
	if strings.Contains(r.RawContent, "resource_link") || strings.Contains(r.RawContent, `"resource"`) {
		t.Errorf("field read content[] holds a resource block: %.300s", r.RawContent)
	}
	if !strings.Contains(r.Text, fmt.Sprintf("of %d", len(runes))) {
		t.Errorf("text does not state the total size %d", len(runes))
	}
	if int(end) < len(runes) && r.Structured["next"] == nil {
		t.Errorf("partial window without next")
	}
}

// TestResourceTemplatesHappyPath reads each resource template over MCP.
func TestResourceTemplatesHappyPath(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	trRef := handles.RecordRef{ConnectionID: connMain, Stream: "transcripts", RecordID: "tr-5"}
	t.Run("stream", func(t *testing.T) {
		got := h.readResourceJSON(t, "pdpp://stream/transcripts")
		ex, ok := h.log.last(func(p string) bool { return p == "/v1/streams/transcripts" })
		if !ok || ex.Status != http.StatusOK {
			t.Fatalf("stream metadata not read from the RS: %v", h.log.requests())
		}
		if !jsonEqual(t, mustRaw(got), ex.Body) {
			t.Errorf("stream resource is not the RS stream metadata")
		}
	})
	recordForms := []struct {
		name string
		uri  string
	}{
		{"record (handles.RecordURI form)", handles.RecordURI(trRef)},
		{"record (three-segment form)", "pdpp://record/" + connMain + "/transcripts/tr-5"},
		// The same id with ":" percent-encoded too: it matches the template, so
		// this case isolates the handler from the URI-template match.
		{"record (fully percent-encoded id)", "pdpp://record/" + connMain + "%2Ftranscripts%3Atr-5"},
	}
	for _, form := range recordForms {
		t.Run(form.name, func(t *testing.T) {
			fetched := h.mustOK(t, "fetch", map[string]any{"id": trRef.ID()})
			contents, err := h.readResource(t, form.uri)
			if err != nil {
				t.Fatalf("resources/read %s: %v", form.uri, err)
			}
			tc, ok := contents[0].(mcp.TextResourceContents)
			if !ok {
				t.Fatalf("record resource content is %T", contents[0])
			}
			if !jsonEqual(t, []byte(tc.Text), withoutDetail(t, fetched.RawStruct)) {
				t.Errorf("record resource differs from fetch structuredContent for the same id")
			}
		})
	}
	t.Run("field-window", func(t *testing.T) {
		r := h.mustOK(t, "read_record_field", map[string]any{"id": trRef.ID(), "field_path": "text", "offset_chars": 4096, "limit_chars": 1000, "detail": "full"})
		uri, _ := r.Meta[pdpp.MetaFieldWindowURI].(string)
		if !strings.HasPrefix(uri, "pdpp://field-window/") {
			t.Fatalf("_meta[%s] = %q", pdpp.MetaFieldWindowURI, uri)
		}
		got := h.readResourceJSON(t, uri)
		if !jsonEqual(t, mustRaw(got), withoutDetail(t, r.RawStruct)) {
			t.Errorf("field-window resource differs from read_record_field:\nresource %s\ntool     %s", mustRaw(got), r.RawStruct)
		}
	})
	t.Run("blob", func(t *testing.T) {
		r := h.mustOK(t, "fetch", map[string]any{"id": connNotes + "/notes:note-2"})
		uris := blobURIs(r.Text)
		if len(uris) != 1 {
			t.Fatalf("fetch of a note with an attachment shows blob URIs %v:\n%s", uris, r.Text)
		}
		line := r.Text[strings.Index(r.Text, "attachment:"):]
		line = line[:strings.Index(line, "\n")]
		if !strings.Contains(line, "image/png") || !regexp.MustCompile(`\d+ bytes`).MatchString(line) || !strings.Contains(line, "/v1/blobs/") {
			t.Errorf("blob field does not show media type, size and the blob route: %s", line)
		}
		contents, err := h.readResource(t, uris[0])
		if err != nil {
			t.Fatalf("resources/read %s: %v", uris[0], err)
		}
		bc, ok := contents[0].(mcp.BlobResourceContents)
		if !ok {
			t.Fatalf("blob resource content is %T", contents[0])
		}
		status, want := h.rsGet(t, tokClient, "/v1/blobs/"+strings.TrimPrefix(uris[0], "pdpp://blob/"))
		if status != http.StatusOK {
			t.Fatalf("RS blob: %d", status)
		}
		got, err := base64.StdEncoding.DecodeString(bc.Blob)
		if err != nil || string(got) != string(want) {
			t.Errorf("blob resource bytes differ from the RS blob (%d vs %d bytes)", len(got), len(want))
		}
		if bc.MIMEType != "image/png" {
			t.Errorf("blob media type = %q", bc.MIMEType)
		}
	})
}

// blobURIs returns the pdpp://blob/ URIs in s.
func blobURIs(s string) []string {
	var out []string
	for _, m := range blobURIRE.FindAllString(s, -1) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// rolesRS is an RS whose schema declares a primary-title role on a field
// named "headline" of stream docs, and no role at all on stream memos, whose
// records nevertheless have fields named title and body.
func rolesRS() http.Handler {
	schema := `{"object":"schema","bearer":{"token_kind":"client"},"connectors":[
	 {"connector_id":"notes","granted_connections":[{"connection_id":"cin_r"}],"streams":[
	  {"name":"docs","expand_capabilities":[],"field_capabilities":{"headline":"t=string,role=primary-title","title":"t=string,eq","body":"t=string,lex"}},
	  {"name":"memos","expand_capabilities":[],"field_capabilities":{"title":"t=string,eq","body":"t=string,lex","subject":"t=string"}}]}]}`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/schema" {
			fmt.Fprint(w, schema)
			return
		}
		parts := strings.Split(r.URL.Path, "/") // /v1/streams/{s}/records/{id}
		if len(parts) != 6 {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"type":"invalid_request_error","code":"not_found","message":"no route"}}`)
			return
		}
		fmt.Fprintf(w, `{"object":"record","id":%q,"stream":%q,"connection_id":"cin_r","data":{"title":"Guessed from the field name","subject":"Guessed from another name","headline":"Declared headline","body":"Short body."}}`, parts[5], parts[3])
	})
}

// TestDeclaredRolesOnly checks seed 003's rule that presentation follows
// declared roles only: a declared primary-title may title the record, while
// fields merely named title or subject are never promoted.
func TestDeclaredRolesOnly(t *testing.T) {
	h := newHarness(t, rolesRS(), "roles-token")
	cases := []struct {
		id, wantTitle string
	}{
		{"cin_r/docs:d-1", "Declared headline"},
		{"cin_r/memos:m-1", "memos m-1"},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			r := h.mustOK(t, "fetch", map[string]any{"id": tc.id})
			if r.Structured["title"] != tc.wantTitle {
				t.Errorf("title = %v, want %q", r.Structured["title"], tc.wantTitle)
			}
			if first := strings.SplitN(r.Text, "\n", 2)[0]; !strings.Contains(first, fmt.Sprintf("title=%q", tc.wantTitle)) {
				t.Errorf("text header = %q, want title %q", first, tc.wantTitle)
			}
			for _, name := range []string{"title", "subject", "headline", "body"} {
				if !strings.Contains(r.Text, name+": ") {
					t.Errorf("field %s not listed under its own name:\n%s", name, r.Text)
				}
			}
		})
	}
}

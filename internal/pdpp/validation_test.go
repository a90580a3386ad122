package pdpp_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestFormatRefusalsMakeNoRSRequest sends, over MCP, every path-bearing
// argument in a form its catalog format refuses, and checks the typed
// invalid_format (or out_of_range) error names that argument and that the
// RS saw no request at all: the generated Validate refused it before any
// handler ran.
func TestFormatRefusalsMakeNoRSRequest(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	tr := connMain + "/transcripts:tr-5"
	long := strings.Repeat("s", 5000)
	cases := []struct {
		name  string
		tool  string
		args  map[string]any
		code  string
		param string
	}{
		{"query stream dot-dot", "query_records", map[string]any{"stream": ".."}, "invalid_format", "stream"},
		{"query stream dot", "query_records", map[string]any{"stream": "."}, "invalid_format", "stream"},
		{"query stream NUL", "query_records", map[string]any{"stream": "transcripts\x00"}, "invalid_format", "stream"},
		{"query stream 5000 chars", "query_records", map[string]any{"stream": long}, "invalid_format", "stream"},
		{"query stream slash", "query_records", map[string]any{"stream": "transcripts/records"}, "invalid_format", "stream"},
		{"query stream encoded dot-dot", "query_records", map[string]any{"stream": "%2E%2E"}, "invalid_format", "stream"},
		{"query connection_id traversal", "query_records", map[string]any{"stream": "transcripts", "connection_id": "../x"}, "invalid_format", "connection_id"},
		{"query fields item", "query_records", map[string]any{"stream": "transcripts", "fields": []string{"id", "text,title"}}, "invalid_format", "fields"},
		{"query expand item", "query_records", map[string]any{"stream": "transcripts", "expand": []string{".."}}, "invalid_format", "expand"},
		{"aggregate stream dot-dot", "aggregate", map[string]any{"stream": "..", "metric": "count"}, "invalid_format", "stream"},
		{"aggregate group_by with a space", "aggregate", map[string]any{"stream": "videos", "metric": "count", "group_by": "codec name"}, "invalid_format", "group_by"},
		{"aggregate field NUL", "aggregate", map[string]any{"stream": "videos", "metric": "sum", "field": "size\x00"}, "invalid_format", "field"},
		{"schema stream dot-dot", "schema", map[string]any{"stream": ".."}, "invalid_format", "stream"},
		{"search streams item", "search", map[string]any{"q": "x", "streams": []string{"transcripts", "a/b"}}, "invalid_format", "streams"},
		{"search connection_id NUL", "search", map[string]any{"q": "x", "connection_id": "\x00"}, "invalid_format", "connection_id"},
		{"fetch id NUL", "fetch", map[string]any{"id": tr + "\x00"}, "invalid_format", "id"},
		{"fetch id 5000 bytes", "fetch", map[string]any{"id": "transcripts:" + long}, "invalid_format", "id"},
		// A list tool's cursor (an RS cursor or a page cursor) has the
		// catalog format page_cursor.
		{"search cursor 5000 bytes", "search", map[string]any{"q": "x", "cursor": long}, "invalid_format", "cursor"},
		{"query cursor 5000 bytes", "query_records", map[string]any{"stream": "transcripts", "cursor": long}, "invalid_format", "cursor"},
		{"query cursor NUL", "query_records", map[string]any{"stream": "transcripts", "cursor": "c\x00"}, "invalid_format", "cursor"},
		{"list subscriptions cursor 5000 bytes", "list_event_subscriptions", map[string]any{"cursor": long}, "invalid_format", "cursor"},
		{"read stream dot-dot", "read_record_field", map[string]any{"stream": "..", "record_id": "tr-5", "field_path": "text"}, "invalid_format", "stream"},
		{"read record_id dot-dot", "read_record_field", map[string]any{"stream": "transcripts", "record_id": "..", "field_path": "text"}, "invalid_format", "record_id"},
		{"read record_id slash", "read_record_field", map[string]any{"stream": "transcripts", "record_id": "tr-5/field-window", "field_path": "text"}, "invalid_format", "record_id"},
		{"read bad field_path", "read_record_field", map[string]any{"id": tr, "field_path": "../text"}, "invalid_format", "field_path"},
		{"read long q", "read_record_field", map[string]any{"id": tr, "field_path": "text", "q": strings.Repeat("q", 600)}, "invalid_format", "q"},
		{"read q NUL", "read_record_field", map[string]any{"id": tr, "field_path": "text", "q": "a\x00"}, "invalid_format", "q"},
		{"read before_chars over maximum", "read_record_field", map[string]any{"id": tr, "field_path": "text", "q": "needle5", "before_chars": 20000}, "out_of_range", "before_chars"},
		{"read after_chars over maximum", "read_record_field", map[string]any{"id": tr, "field_path": "text", "q": "needle5", "after_chars": 20000}, "out_of_range", "after_chars"},
		{"get subscription traversal", "get_event_subscription", map[string]any{"subscription_id": "../streams"}, "invalid_format", "subscription_id"},
		{"delete subscription dot-dot", "delete_event_subscription", map[string]any{"subscription_id": ".."}, "invalid_format", "subscription_id"},
		{"create subscription stream NUL", "create_event_subscription", map[string]any{"callback_url": "https://hooks.example.com/pdpp", "streams": []string{"\x00"}}, "invalid_format", "streams"},
		// The catalog-wide bounds (max_argument_bytes, max_argument_items)
		// on arguments that declare no bound of their own.
		{"search q over 4096 bytes", "search", map[string]any{"q": long}, "too_long", "q"},
		{"query sort over 4096 bytes", "query_records", map[string]any{"stream": "transcripts", "sort": long}, "too_long", "sort"},
		{"query changes_since over 4096 bytes", "query_records", map[string]any{"stream": "transcripts", "changes_since": long}, "too_long", "changes_since"},
		{"aggregate time_zone over 4096 bytes", "aggregate", map[string]any{"stream": "videos", "metric": "count", "time_zone": long}, "too_long", "time_zone"},
		{"read cursor over 4096 bytes", "read_record_field", map[string]any{"cursor": long}, "too_long", "cursor"},
		{"query 65 fields", "query_records", map[string]any{"stream": "transcripts", "fields": manyNames(65)}, "too_many_items", "fields"},
		{"fetch 65 expand relations", "fetch", map[string]any{"id": tr, "expand": manyNames(65)}, "too_many_items", "expand"},
		{"search 65 streams", "search", map[string]any{"q": "x", "streams": manyNames(65)}, "too_many_items", "streams"},
		{"create subscription 65 streams", "create_event_subscription", map[string]any{"callback_url": "https://hooks.example.com/pdpp", "streams": manyNames(65)}, "too_many_items", "streams"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.log.reset()
			r := h.call(t, tc.tool, tc.args)
			if !r.Res.IsError || r.errorCode() != tc.code {
				t.Fatalf("isError %v code %q, want %s:\n%.400s", r.Res.IsError, r.errorCode(), tc.code, r.Text)
			}
			e := r.errorObject()
			if e["param"] != tc.param || e["type"] != "adapter_error" {
				t.Errorf("param/type = %v/%v, want %s/adapter_error", e["param"], e["type"], tc.param)
			}
			msg, _ := e["message"].(string)
			if !strings.HasPrefix(msg, tc.param+" ") || (tc.code == "invalid_format" && !strings.Contains(msg, "allowed: ")) {
				t.Errorf("message does not name %s and what is allowed: %q", tc.param, msg)
			}
			if len(msg) > 600 {
				t.Errorf("message is %d bytes; an over-long value must be shortened", len(msg))
			}
			if reqs := h.log.requests(); len(reqs) != 0 {
				t.Errorf("refused call reached the RS: %v", reqs)
			}
		})
	}
}

// manyNames returns n distinct valid names.
func manyNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "f" + strconv.Itoa(i)
	}
	return out
}

// TestReadFieldCursorConflicts checks that a read_record_field cursor never
// silently wins over an explicit argument that names another record,
// connection, field or position: each is conflicting_arguments naming that
// argument, with no RS request. Arguments that agree with the cursor pass.
func TestReadFieldCursorConflicts(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	first := h.mustOK(t, "read_record_field", map[string]any{"id": connMain + "/transcripts:tr-5", "field_path": "text", "limit_chars": 200, "detail": "full"})
	cursor, _ := first.Structured["next_cursor"].(string)
	if cursor == "" {
		t.Fatal("no next_cursor in a partial window at detail full")
	}
	conflicts := []struct {
		name  string
		args  map[string]any
		param string
	}{
		{"id in another connection", map[string]any{"id": connPeer + "/transcripts:tr-5"}, "id"},
		{"id of another record", map[string]any{"id": connMain + "/transcripts:tr-6"}, "id"},
		{"legacy id of another record", map[string]any{"id": "transcripts:tr-6"}, "id"},
		{"connection_id", map[string]any{"connection_id": connPeer}, "connection_id"},
		{"stream", map[string]any{"stream": "videos"}, "stream"},
		{"record_id", map[string]any{"record_id": "tr-6"}, "record_id"},
		{"offset_chars", map[string]any{"offset_chars": 0}, "offset_chars"},
		{"q", map[string]any{"q": "needle5"}, "q"},
		{"before_chars", map[string]any{"before_chars": 10}, "before_chars"},
		{"after_chars", map[string]any{"after_chars": 10}, "after_chars"},
		{"field_path", map[string]any{"field_path": "language"}, "field_path"},
	}
	for _, tc := range conflicts {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"cursor": cursor, "field_path": "text"}
			for k, v := range tc.args {
				args[k] = v
			}
			h.log.reset()
			r := h.call(t, "read_record_field", args)
			if !r.Res.IsError || r.errorCode() != "conflicting_arguments" {
				t.Fatalf("isError %v code %q, want conflicting_arguments:\n%.400s", r.Res.IsError, r.errorCode(), r.Text)
			}
			if p := r.errorObject()["param"]; p != tc.param {
				t.Errorf("param = %v, want %s", p, tc.param)
			}
			if reqs := h.log.requests(); len(reqs) != 0 {
				t.Errorf("refused call reached the RS: %v", reqs)
			}
		})
	}
	t.Run("agreeing arguments pass", func(t *testing.T) {
		r := h.mustOK(t, "read_record_field", map[string]any{
			"cursor": cursor, "field_path": "text", "id": connMain + "/transcripts:tr-5",
			"connection_id": connMain, "stream": "transcripts", "record_id": "tr-5", "limit_chars": 100,
		})
		w, _ := r.Structured["window"].(map[string]any)
		if w["start_chars"] != float64(200) || w["end_chars"] != float64(300) {
			t.Errorf("window = %v, want 200-300", w)
		}
		ex := lastData(t, h)
		if !strings.Contains(ex.Query, "connection_id="+connMain) {
			t.Errorf("read went to %s", ex.Line)
		}
	})
}

// TestReadFieldCursorAlone checks that the continuations a read returns are
// enough on their own, as a client pastes them: next_cursor (of the full
// detail), or the field-window URI from _meta, given as cursor (or as id) with no
// field_path reads the next window of the same field. Without a cursor,
// field_path is still required, refused before any RS request.
func TestReadFieldCursorAlone(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	first := h.mustOK(t, "read_record_field", map[string]any{"id": connMain + "/transcripts:tr-5", "field_path": "text", "limit_chars": 200, "detail": "full"})
	cursor, _ := first.Structured["next_cursor"].(string)
	if cursor == "" {
		t.Fatal("no next_cursor in a partial window at detail full")
	}
	uri, _ := first.Res.Meta.AdditionalFields["pdpp/field_window_uri"].(string)
	if uri == "" {
		t.Fatal("no field-window URI in _meta")
	}
	cases := []struct {
		name       string
		args       map[string]any
		start, end float64
	}{
		{"next_cursor alone", map[string]any{"cursor": cursor}, 200, 400},
		{"next_cursor with limit_chars", map[string]any{"cursor": cursor, "limit_chars": 50}, 200, 250},
		{"field-window URI as cursor", map[string]any{"cursor": uri}, 0, 200},
		{"field-window URI as id", map[string]any{"id": uri}, 0, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.mustOK(t, "read_record_field", tc.args)
			w, _ := r.Structured["window"].(map[string]any)
			if w["start_chars"] != tc.start || w["end_chars"] != tc.end || r.Structured["field_path"] != "text" {
				t.Errorf("field %v window %v, want text %v-%v", r.Structured["field_path"], w, tc.start, tc.end)
			}
			if r.Structured["id"] != connMain+"/transcripts:tr-5" {
				t.Errorf("id = %v", r.Structured["id"])
			}
		})
	}
	t.Run("no cursor and no field_path", func(t *testing.T) {
		h.log.reset()
		r := h.call(t, "read_record_field", map[string]any{"id": connMain + "/transcripts:tr-5"})
		if !r.Res.IsError || r.errorCode() != "missing_argument" || r.errorObject()["param"] != "field_path" {
			t.Fatalf("isError %v code %q param %v, want missing_argument field_path:\n%.400s", r.Res.IsError, r.errorCode(), r.errorObject()["param"], r.Text)
		}
		if reqs := h.log.requests(); len(reqs) != 0 {
			t.Errorf("refused call reached the RS: %v", reqs)
		}
	})
}

// TestReadFieldQWindowCentred checks that q with a small limit_chars keeps
// text on both sides of the match within limit_chars, through MCP against
// the demo RS: before_chars/after_chars the caller leaves out are scaled to
// fit, and one the caller gives is kept.
func TestReadFieldQWindowCentred(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	const q = "needle5"
	tests := []struct {
		name                   string
		args                   map[string]any
		minBefore, minAfter    int // context the window must keep
		exactBefore, exactSent int // -1: not checked
	}{
		{"limit 300", map[string]any{"limit_chars": 300}, 50, 150, -1, -1},
		{"limit 100", map[string]any{"limit_chars": 100}, 15, 50, -1, -1},
		{"limit 300, before_chars 40", map[string]any{"limit_chars": 300, "before_chars": 40}, 40, 200, 40, -1},
		{"limit 300, after_chars 30", map[string]any{"limit_chars": 300, "after_chars": 30}, 200, 30, -1, -1},
		{"no limit keeps the defaults", map[string]any{}, 400, 1200, 400, 1600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"id": connMain + "/transcripts:tr-5", "field_path": "text", "q": q}
			for k, v := range tc.args {
				args[k] = v
			}
			r := h.mustOK(t, "read_record_field", args)
			w, _ := r.Structured["window"].(map[string]any)
			num := func(k string) int { f, _ := w[k].(float64); return int(f) }
			start, end, ms, me := num("start_chars"), num("end_chars"), num("match_start_chars"), num("match_end_chars")
			if me-ms != len(q) {
				t.Fatalf("no match in window %v", w)
			}
			if limit, ok := tc.args["limit_chars"].(int); ok && end-start > limit {
				t.Errorf("window %d-%d is over limit_chars %d", start, end, limit)
			}
			if ms-start < tc.minBefore || end-me < tc.minAfter {
				t.Errorf("window %d-%d keeps %d chars before and %d after the match %d-%d; want at least %d and %d",
					start, end, ms-start, end-me, ms, me, tc.minBefore, tc.minAfter)
			}
			if tc.exactBefore >= 0 && ms-start != tc.exactBefore {
				t.Errorf("window keeps %d chars before the match, want %d", ms-start, tc.exactBefore)
			}
			ex := lastData(t, h)
			vals, _ := url.ParseQuery(ex.Query)
			b, _ := strconv.Atoi(vals.Get("before_chars"))
			a, _ := strconv.Atoi(vals.Get("after_chars"))
			if limit, ok := tc.args["limit_chars"].(int); ok && b+a+len(q) > limit {
				t.Errorf("sent before_chars %d + after_chars %d + match %d over limit_chars %d", b, a, len(q), limit)
			}
			if tc.exactSent >= 0 && b+a != tc.exactSent {
				t.Errorf("sent before_chars %d + after_chars %d, want %d", b, a, tc.exactSent)
			}
		})
	}
}

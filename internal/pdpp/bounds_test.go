package pdpp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
)

// errorMembersRS answers every data request with an RS 400 whose error
// object has the given members after its type, code and message.
func errorMembersRS(extra string) http.Handler {
	body := `{"error":{"type":"invalid_request_error","code":"too_wide","message":"wide <error>"` + extra + `}}`
	return faultyRS(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(body))
	})
}

// TestRSErrorMembersAreCapped: an RS error envelope of hundreds of
// thousands of small members (5 MB, past the bound of an error body read,
// and 900 KB, within it) becomes a tool error of at most
// evidence.ErrorMembers of the RS's members, within the tool's budget,
// keeping the RS's type, code and message and saying it was cut.
func TestRSErrorMembersAreCapped(t *testing.T) {
	members := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `,"m%06d":%d`, i, i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name    string
		members int
	}{{"400,000 members", 400_000}, {"70,000 members", 70_000}, {"100 members", 100}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, errorMembersRS(members(tc.members)), tokClient)
			for _, c := range readCalls {
				raw := h.rawRequest("tools/call", map[string]any{"name": c.tool, "arguments": c.args})
				r := h.call(t, c.tool, c.args)
				if !r.Res.IsError || r.errorCode() != "too_wide" {
					t.Fatalf("%s: want the RS's too_wide error, got isError=%v code=%q", c.tool, r.Res.IsError, r.errorCode())
				}
				if budget, _ := mcptools.ResultBudgetOf(c.tool); len(raw) > budget.Limit(0) {
					t.Errorf("%s: error result is %d bytes, budget %d", c.tool, len(raw), budget.Limit(0))
				}
				e := r.errorObject()
				own := 0
				for k := range e {
					switch k {
					case "truncated", "error_bytes", "error_body_cut_at":
					default:
						own++
					}
				}
				if own > evidence.ErrorMembers || e["truncated"] != true {
					t.Errorf("%s: keeps %d of the RS's members (at most %d), truncated %v", c.tool, own, evidence.ErrorMembers, e["truncated"])
				}
				if e["type"] != "invalid_request_error" || e["message"] != "wide <error>" || !strings.Contains(r.Text, "error too_wide: wide <error>") {
					t.Errorf("%s: lost the RS's type or message: %v\n%s", c.tool, e, r.Text)
				}
			}
		})
	}
}

// checkContinuationsWithin fails when a continuation of r (text or
// structured output) names an offset past total, or the reply names 2^62
// or 2^63-1.
func checkContinuationsWithin(t *testing.T, r callResult, total int) {
	t.Helper()
	for _, huge := range []string{"9223372036854775807", "4611686018427387904"} {
		if strings.Contains(r.Text+r.RawStruct, huge) {
			t.Errorf("reply names %s:\n%.600s", huge, r.Text)
		}
	}
	for _, c := range visibleCalls(r.Text) {
		if off, ok := c.Args["offset_chars"].(float64); ok && int(off) > total {
			t.Errorf("continuation %s names offset %v past the end (%d)", c.Raw, off, total)
		}
	}
	for _, key := range []string{"next", "previous", "full"} {
		if _, args, ok := continuation(r.Structured[key]); ok {
			if off, _ := args["offset_chars"].(float64); int(off) > total {
				t.Errorf("structured %s names offset %v past the end (%d)", key, off, total)
			}
		}
	}
}

// TestReadRecordFieldOffsetsStayInTheField reads the demo RS's longest
// transcript at offsets around and past its end. An offset past the end
// is a typed out_of_range error naming offset_chars, the field's size and
// the call that reads its last window, which works; an absurd offset (2^62)
// is refused before any RS request; a window running past the end ends at
// it. No reply names an offset past the end, nor a number no read can name.
func TestReadRecordFieldOffsetsStayInTheField(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	var schema struct {
		Properties struct {
			Offset struct {
				Maximum int `json:"maximum"`
			} `json:"offset_chars"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(mustJSON(h.tools["read_record_field"].InputSchema)), &schema); err != nil || schema.Properties.Offset.Maximum != evidence.MaxOffsetChars {
		t.Fatalf("offset_chars maximum in the catalog is %d, evidence.MaxOffsetChars %d (%v)", schema.Properties.Offset.Maximum, evidence.MaxOffsetChars, err)
	}
	top := longestTranscripts(t, h)[0]
	id := top.conn + "/transcripts:" + top.id
	total := top.chars
	read := func(args map[string]any) map[string]any {
		return withArg(withArg(args, "id", id), "field_path", "text")
	}
	t.Run("past the end", func(t *testing.T) {
		for _, args := range []map[string]any{
			{"offset_chars": total + 1},
			{"offset_chars": total + 10, "limit_chars": 100},
			{"offset_chars": evidence.MaxOffsetChars},
		} {
			r := h.call(t, "read_record_field", read(args))
			e := r.errorObject()
			if !r.Res.IsError || r.errorCode() != "out_of_range" || e["param"] != "offset_chars" || e["total_chars"] != float64(total) {
				t.Fatalf("%v: want out_of_range on offset_chars with total_chars %d, got %v:\n%s", args, total, e, r.Text)
			}
			if !strings.Contains(r.Text, fmt.Sprint(total)) {
				t.Errorf("text does not give the field's size:\n%s", r.Text)
			}
			tool, nextArgs, ok := continuation(e["next"])
			if !ok || tool != "read_record_field" {
				t.Fatalf("no next call in the error: %v", e)
			}
			if c, ok := callAfter(r.Text, "next: "); !ok || mustJSON(c.Args) != mustJSON(nextArgs) {
				t.Errorf("text does not show the next call %v:\n%s", nextArgs, r.Text)
			}
			last := h.mustOK(t, tool, nextArgs)
			w, _ := last.Structured["window"].(map[string]any)
			if w["end_chars"] != float64(total) || last.Structured["next"] != nil {
				t.Errorf("the next call does not read the field's last window: %v", w)
			}
			checkContinuationsWithin(t, r, total)
			checkContinuationsWithin(t, last, total)
		}
	})
	t.Run("absurd offsets are refused before the RS", func(t *testing.T) {
		for _, off := range []any{1 << 62, 9223372036854775807, evidence.MaxOffsetChars + 1} {
			h.log.reset()
			r := h.call(t, "read_record_field", read(map[string]any{"offset_chars": off}))
			if !r.Res.IsError || r.errorCode() != "out_of_range" || r.errorObject()["param"] != "offset_chars" {
				t.Fatalf("offset %v: want out_of_range on offset_chars, got %s", off, r.Text)
			}
			if got := h.log.matching(isDataPath); len(got) > 0 {
				t.Errorf("offset %v reached the RS: %v", off, got)
			}
			if strings.Contains(r.Text+r.RawStruct, "9223372036854775807") && off != 9223372036854775807 {
				t.Errorf("reply names 2^63-1:\n%s", r.Text)
			}
		}
	})
	t.Run("windows end at the field's end", func(t *testing.T) {
		for _, args := range []map[string]any{
			{"offset_chars": total - 10, "limit_chars": 100},
			{"offset_chars": total - 1},
			{"offset_chars": total},
		} {
			r := h.mustOK(t, "read_record_field", read(args))
			w, _ := r.Structured["window"].(map[string]any)
			if w["end_chars"] != float64(total) || w["has_more"] != false || r.Structured["next"] != nil {
				t.Errorf("%v: window %v, next %v", args, w, r.Structured["next"])
			}
			checkContinuationsWithin(t, r, total)
		}
	})
	t.Run("walking next stays in the field", func(t *testing.T) {
		args := read(map[string]any{"limit_chars": 16384})
		// At most total/16384+2 steps: each advances by a full window.
		for step := 0; step < total/16384+2; step++ {
			r := h.mustOK(t, "read_record_field", args)
			checkContinuationsWithin(t, r, total)
			_, next, ok := continuation(r.Structured["next"])
			if !ok {
				return
			}
			args = next
		}
		t.Fatalf("next did not reach the end of %d characters", total)
	})
}

// TestFieldWindowsPastTheEndAreClamped distrusts an RS's windows near the
// field's end: a window asked past the end, however the RS places it, is
// the typed out_of_range error; one that ends past the end is cut there;
// a next offset past the end (or no further than the window) is replaced by
// the window's end or dropped at the field's end.
func TestFieldWindowsPastTheEndAreClamped(t *testing.T) {
	tests := []struct {
		name     string
		args     map[string]any
		window   string
		wantCode string
		wantText string
		wantEnd  int
		wantNext any // offset of the next read; nil: none
	}{
		{"asked past the end, RS echoes the offset", map[string]any{"offset_chars": 999_999_999},
			`{"text":"","start_chars":999999999,"end_chars":1000004095,"total_chars":10,"has_more":true,"next_offset_chars":1000004095}`, "out_of_range", "", 0, nil},
		{"asked past the end, RS clamps", map[string]any{"offset_chars": 20},
			`{"text":"","start_chars":10,"end_chars":10,"total_chars":10}`, "out_of_range", "", 0, nil},
		{"ends past the end", map[string]any{"offset_chars": 8},
			`{"text":"abcdef","start_chars":8,"end_chars":14,"total_chars":10,"has_more":true,"next_offset_chars":14}`, "", "ab", 10, nil},
		{"next past the end", nil,
			`{"text":"abc","start_chars":0,"end_chars":3,"total_chars":10,"has_more":true,"next_offset_chars":9223372036854775807}`, "", "abc", 3, float64(3)},
		{"next behind the window", nil,
			`{"text":"abc","start_chars":0,"end_chars":3,"total_chars":10,"has_more":true,"next_offset_chars":0}`, "", "abc", 3, float64(3)},
		{"has_more at the end", nil,
			`{"text":"abc","start_chars":0,"end_chars":3,"total_chars":3,"has_more":true,"next_offset_chars":3}`, "", "abc", 3, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := fieldWindowBody(tc.window)
			h := newHarness(t, jsonRS(func(string) string { return body }), tokClient)
			args := map[string]any{"id": "cin_a/notes:n1", "field_path": "body"}
			for k, v := range tc.args {
				args[k] = v
			}
			for _, detail := range []string{"compact", "full"} {
				r := h.call(t, "read_record_field", withArg(args, "detail", detail))
				if tc.wantCode != "" {
					if r.errorCode() != tc.wantCode || r.errorObject()["total_chars"] != float64(10) {
						t.Fatalf("%s: want %s with total_chars 10, got %s", detail, tc.wantCode, r.Text)
					}
					checkContinuationsWithin(t, r, 10)
					continue
				}
				if r.Res.IsError {
					t.Fatalf("%s: %s", detail, r.Text)
				}
				w, _ := r.Structured["window"].(map[string]any)
				if w["end_chars"] != float64(tc.wantEnd) || structuredWindowText(t, r) != tc.wantText {
					t.Errorf("%s: window %v text %q, want end %d text %q", detail, w, structuredWindowText(t, r), tc.wantEnd, tc.wantText)
				}
				var next any
				if _, a, ok := continuation(r.Structured["next"]); ok {
					next = a["offset_chars"]
				}
				if next != tc.wantNext || (tc.wantNext == nil) != (w["has_more"] == false) {
					t.Errorf("%s: next offset %v has_more %v, want %v", detail, next, w["has_more"], tc.wantNext)
				}
				checkContinuationsWithin(t, r, 10)
			}
		})
	}
}

// TestSchemaListItemsThatAreNotObjectsAreBadResponses: the lists of a
// schema document (connectors, their streams, granted connections), at
// both details, and an aggregation's groups refuse an item that is not an
// object, as the RS lists do, where encoding/json would read null as a
// nameless stream or an empty bucket.
func TestSchemaListItemsThatAreNotObjectsAreBadResponses(t *testing.T) {
	const stream = `{"name":"notes","field_capabilities":{"body":"text"}}`
	for _, tc := range []struct {
		body, item string
	}{
		{`"connectors":[null]`, "item 1 of the schema's connectors list is null"},
		{`"connectors":[{"connector_id":"c1","streams":[` + stream + `,null]}]`, "item 2 of the schema's streams list is null"},
		{`"connectors":[{"connector_id":"c1","streams":[` + stream + `],"granted_connections":["cin_a"]}]`, "item 1 of the schema's granted_connections list is a string"},
		{`"connectors":[{"connector_id":"c1","streams":[{"name":"notes","granted_connections":[1]}]}]`, "item 1 of the schema's granted_connections list is a number"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			h := newHarness(t, schemaDocRS(tc.body), tokClient)
			for _, args := range []map[string]any{nil, {"stream": "notes", "detail": "full"}} {
				r := h.call(t, "schema", args)
				msg, _ := r.errorObject()["message"].(string)
				if !r.Res.IsError || r.errorCode() != "rs_bad_response" || !strings.Contains(msg, tc.item) {
					t.Errorf("schema %v: want rs_bad_response naming %q, got isError=%v code=%q:\n%.300s", args, tc.item, r.Res.IsError, r.errorCode(), r.Text)
				}
			}
		})
	}
	t.Run("aggregate groups", func(t *testing.T) {
		for _, groups := range []string{`[null]`, `[1,"x"]`, `[{"key":"a","count":1},null]`} {
			h := newHarness(t, jsonRS(func(string) string {
				return `{"object":"aggregation","stream":"notes","metric":"count","group_by":"kind","groups":` + groups + `}`
			}), tokClient)
			r := h.call(t, "aggregate", map[string]any{"stream": "notes", "metric": "count", "group_by": "kind"})
			if msg, _ := r.errorObject()["message"].(string); !r.Res.IsError || r.errorCode() != "rs_bad_response" || !strings.Contains(msg, "of the aggregate's groups list is") {
				t.Errorf("groups %s: want rs_bad_response naming the item, got isError=%v code=%q:\n%.300s", groups, r.Res.IsError, r.errorCode(), r.Text)
			}
		}
	})
	t.Run("objects pass", func(t *testing.T) {
		h := newHarness(t, schemaDocRS(`"connectors":[{"connector_id":"c1","granted_connections":[{"connection_id":"cin_a"}],"streams":[`+stream+`]}]`), tokClient)
		if r := h.call(t, "schema", nil); r.Res.IsError || !strings.Contains(r.Text, "stream notes") {
			t.Errorf("a well-formed schema: %s", r.Text)
		}
	})
}

// schemaDocRS answers every request with a client token's schema document
// whose other members are members.
func schemaDocRS(members string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"schema","bearer":{"token_kind":"client"},` + members + `}`))
	})
}

// TestListBodiesWithoutDataAreBadResponses answers every list route (search,
// records, event subscriptions) 200 with a body that has no data list, or
// a data list with an item that is not an object, and checks each list
// tool, at each detail, reports rs_bad_response (naming the item) rather
// than an empty list, a nameless item or a count of non-items; an empty
// data list is a success with no items.
func TestListBodiesWithoutDataAreBadResponses(t *testing.T) {
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"search", map[string]any{"q": "needle"}},
		{"search", map[string]any{"q": "needle", "detail": "full"}},
		{"query_records", map[string]any{"stream": "notes"}},
		{"query_records", map[string]any{"stream": "notes", "detail": "full"}},
		{"list_event_subscriptions", nil},
		{"list_event_subscriptions", map[string]any{"detail": "full"}},
	}
	for _, tc := range []struct {
		body   string
		wantOK bool
		// item is how the error names a non-object item ("" for none).
		item string
	}{
		{`{"object":"list","data":[1,"x"],"has_more":false}`, false, "item 1 of the"},
		{`{"object":"list","data":[null],"has_more":false}`, false, "item 1 of the"},
		{`{"data":[{"object":"record","id":"n1","subscription_id":"sub_1","record_key":"n1","stream":"notes","connection_id":"cin_a","data":{}},"x"]}`, false, "item 2 of the"},
		{`{"data":[[],{}]}`, false, "item 1 of the"},
		{`{"data":[true]}`, false, "item 1 of the"},
		{`null`, false, ""},
		{`{}`, false, ""},
		{`{"data":null}`, false, ""},
		{`{"object":"list","data":null,"has_more":false}`, false, ""},
		{`{"object":"list","has_more":false}`, false, ""},
		{`{"object":"list","data":{}}`, false, ""},
		{`[]`, false, ""},
		{`{"object":"list","data":[],"has_more":false}`, true, ""},
	} {
		t.Run(tc.body, func(t *testing.T) {
			h := newHarness(t, jsonRS(func(string) string { return tc.body }), tokClient)
			for _, c := range calls {
				r := h.call(t, c.tool, c.args)
				if tc.wantOK {
					if r.Res.IsError {
						t.Errorf("%s %v on an empty list: %s", c.tool, c.args, r.Text)
					}
					continue
				}
				if !r.Res.IsError || r.errorCode() != "rs_bad_response" {
					t.Errorf("%s %v: want rs_bad_response, got isError=%v code=%q:\n%.300s", c.tool, c.args, r.Res.IsError, r.errorCode(), r.Text)
				}
				if msg, _ := r.errorObject()["message"].(string); tc.item != "" && !strings.Contains(msg, tc.item) {
					t.Errorf("%s %v: the error does not name the item (%q): %q", c.tool, c.args, tc.item, msg)
				}
			}
		})
	}
}

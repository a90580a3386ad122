package pdpp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
)

// hostileRS serves one record n1 of stream notes whose data members are
// members, alone (GET .../records/n1) and as a one-record page (GET
// .../records), from bodies built once, declaring their length as an RS
// behind a proxy does.
func hostileRS(members string) (http.Handler, int) {
	rec := []byte(`{"object":"record","id":"n1","stream":"notes","connection_id":"cin_a","emitted_at":"2024-01-01T00:00:00Z","data":{` + members + `}}`)
	page := []byte(`{"object":"list","data":[` + string(rec) + `],"has_more":false}`)
	return faultyRS(func(w http.ResponseWriter, r *http.Request) {
		body := rec
		if strings.HasSuffix(r.URL.Path, "/records") {
			body = page
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}), len(page)
}

// allocPerBodyByte bounds what one call allocates in this process per
// byte of the RS body: the test's request log copies the body twice, the
// adapter reads it once, and rendering and the MCP reply add little
// (about 3 in all, 4 under the race detector; the bound leaves room).
// Decoding the value into Go values, which rendering no longer does, took
// 100-200.
const allocPerBodyByte = 6

// TestHostileValuesAreDescribedNotDecoded serves a record whose field is
// a large array of empty objects, or an object of 100,000 members, or
// whose data is such an object, and calls query_records and fetch through
// the MCP client: each call allocates at most allocPerBodyByte bytes per
// RS body byte (and 1 KiB per rendered field of the last), its reply stays
// within the tool's budget, and it describes the value (kind, bytes,
// element or member count) instead of showing it, or counts the fields
// past evidence.MaxRecordFields.
func TestHostileValuesAreDescribedNotDecoded(t *testing.T) {
	var members strings.Builder
	members.WriteString("{")
	for i := range 100_000 {
		if i > 0 {
			members.WriteString(",")
		}
		fmt.Fprintf(&members, `"k%06d":{}`, i)
	}
	members.WriteString("}")
	for _, tc := range []struct {
		name, value, describes string
		items                  int
	}{
		{"2 MB array of empty objects", "[" + strings.Repeat("{},", 700_000) + "{}]", "JSON array, 700001 elements, 2100004 bytes", 700_001},
		{"object of 100,000 members", members.String(), "JSON object, 100000 members, 1300001 bytes", 100_000},
		{"record of 100,000 fields", "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handler, bodyBytes := hostileRS(`"title":"hostile","blob":` + tc.value)
			if tc.value == "" {
				// The record's data itself is the object of 100,000 members.
				handler, bodyBytes = hostileRS(members.String()[1 : members.Len()-1])
			}
			h := newHarness(t, handler, tokClient)
			for _, c := range []struct {
				tool string
				args map[string]any
			}{
				{"query_records", map[string]any{"stream": "notes"}},
				{"fetch", map[string]any{"id": "cin_a/notes:n1"}},
			} {
				params := map[string]any{"name": c.tool, "arguments": c.args}
				alloc, raw := callAllocs(h, params)
				t.Logf("%s: %d bytes allocated for a %d-byte RS body (%.1f per byte), reply %d bytes",
					c.tool, alloc, bodyBytes, float64(alloc)/float64(bodyBytes), len(raw))
				limit := allocPerBodyByte * bodyBytes
				if tc.value == "" {
					// The fields kept are rendered: up to 1 KiB each.
					limit += evidence.MaxRecordFields << 10
				}
				if alloc > uint64(limit) {
					t.Errorf("%s: allocated %d bytes, over %d", c.tool, alloc, limit)
				}
				if budget, _ := mcptools.ResultBudgetOf(c.tool); len(raw) > budget.Limit(0) {
					t.Errorf("%s: reply is %d bytes, budget %d", c.tool, len(raw), budget.Limit(0))
				}
				var res struct {
					IsError bool `json:"isError"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
					Structured json.RawMessage `json:"structuredContent"`
				}
				if err := json.Unmarshal(raw, &res); err != nil || res.IsError || len(res.Content) == 0 {
					t.Fatalf("%s: not a successful result (%v): %.300s", c.tool, err, raw)
				}
				if tc.value == "" {
					// Fields past evidence.MaxRecordFields are counted, not rendered.
					if text := res.Content[0].Text; !strings.Contains(text, "100000 fields") && !strings.Contains(text, "98000 more fields not rendered") {
						t.Errorf("%s: text does not count the record's fields:\n%.600s", c.tool, text)
					}
					continue
				}
				if text := res.Content[0].Text; !strings.Contains(text, "blob: ["+tc.describes+", not shown in full: ") {
					t.Errorf("%s: text does not describe the value as %q:\n%.600s", c.tool, tc.describes, text)
				}
				if c.tool == "query_records" && !strings.Contains(string(res.Structured), fmt.Sprintf(`"items":%d`, tc.items)) {
					t.Errorf("%s: structured preview does not count the value's %d items:\n%.600s", c.tool, tc.items, res.Structured)
				}
			}
		})
	}
}

// TestHostileSubscriptionsAreDescribed serves a subscription with a member
// that is a 2 MB array of empty objects, and a list of more subscriptions
// than the server renders: list_event_subscriptions and
// get_event_subscription allocate at most allocPerBodyByte per RS body
// byte (plus the slack of an undeclared body's doubling read; about 6 in
// all, 7 under the race detector, where decoding the member took over
// 100), stay within
// budget and show the member as a preview counting its elements; so does
// discovery over an advertisement of 700,000 event types and a 2 MB extra
// member; the long list is refused as rs_response_too_large.
func TestHostileSubscriptionsAreDescribed(t *testing.T) {
	const elements = 700_000
	sub := subscriptionJSON("sub_wide", "https://hooks.example.com/a", `,"filters":[`+strings.Repeat("{},", elements-1)+"{}]")
	h := newHarness(t, faultyRS(newSubsRS([][]byte{sub}, nil, "evt_1", "").ServeHTTP), tokClient)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"list_event_subscriptions", map[string]any{}},
		{"get_event_subscription", map[string]any{"subscription_id": "sub_wide"}},
	} {
		params := map[string]any{"name": c.tool, "arguments": c.args}
		alloc, raw := callAllocs(h, params)
		t.Logf("%s: %d bytes allocated for a %d-byte subscription (%.1f per byte), reply %d bytes", c.tool, alloc, len(sub), float64(alloc)/float64(len(sub)), len(raw))
		// This RS declares no length, so the body is read doubling from
		// 64 KiB: up to four times its size where one would do.
		if limit := uint64((allocPerBodyByte + 3) * len(sub)); alloc > limit {
			t.Errorf("%s: allocated %d bytes, over %d", c.tool, alloc, limit)
		}
		if budget, _ := mcptools.ResultBudgetOf(c.tool); len(raw) > budget.Limit(0) {
			t.Errorf("%s: reply is %d bytes, budget %d", c.tool, len(raw), budget.Limit(0))
		}
		if s := string(raw); !strings.Contains(s, fmt.Sprintf(`"items":%d`, elements)) || !strings.Contains(s, `"values_cut":1`) {
			t.Errorf("%s: the filters member is not a preview counting its %d elements, or the cut is not reported:\n%.1200s", c.tool, elements, raw)
		}
	}

	t.Run("advertisement of 700,000 event types", func(t *testing.T) {
		adv := `{"capabilities":{"client_event_subscriptions":{"supported":true,"endpoint":"/v1/event-subscriptions","event_types":[` +
			strings.Repeat(`{},`, elements-1) + `{"type":"x.last"}],"extra":[` + strings.Repeat("{},", elements-1) + "{}]}}}"
		h := newHarness(t, faultyRS(newSubsRS(nil, nil, "evt_1", adv).ServeHTTP), tokClient)
		params := map[string]any{"name": "discover_event_subscription_capabilities", "arguments": map[string]any{}}
		alloc, raw := callAllocs(h, params)
		t.Logf("%d bytes allocated for a %d-byte advertisement (%.1f per byte)", alloc, len(adv), float64(alloc)/float64(len(adv)))
		// As above, plus the 10,000 event types decoded one by one
		// (about 400 bytes each, 1 per body byte here).
		if limit := uint64((allocPerBodyByte+3)*len(adv) + 10_000*400); alloc > limit {
			t.Errorf("allocated %d bytes, over %d", alloc, limit)
		}
		if budget, _ := mcptools.ResultBudgetOf("discover_event_subscription_capabilities"); len(raw) > budget.Limit(0) {
			t.Errorf("reply is %d bytes, budget %d", len(raw), budget.Limit(0))
		}
	})

	t.Run("more subscriptions than rendered", func(t *testing.T) {
		subs := make([][]byte, 10_001)
		for i := range subs {
			subs[i] = []byte("{}")
		}
		h := newHarness(t, faultyRS(newSubsRS(subs, nil, "evt_1", "").ServeHTTP), tokClient)
		if r := h.call(t, "list_event_subscriptions", map[string]any{}); !r.Res.IsError || r.errorCode() != "rs_response_too_large" {
			t.Errorf("a list of 10,001 subscriptions: want rs_response_too_large, got isError=%v code %q", r.Res.IsError, r.errorCode())
		}
	})
}

// TestHostilePagesAreRefused serves a records page and a search page of
// 300,000 tiny items, more than evidence.MaxPageItems: query_records and
// search refuse them as rs_bad_response before decoding any item,
// allocating at most allocPerBodyByte per RS body byte (plus the doubling
// read of an undeclared body).
func TestHostilePagesAreRefused(t *testing.T) {
	page := `{"object":"list","data":[` + strings.Repeat(`{"id":"a"},`, 300_000) + `{}],"has_more":false}`
	h := newHarness(t, jsonRS(func(string) string { return page }), tokClient)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"query_records", map[string]any{"stream": "notes"}},
		{"search", map[string]any{"q": "x"}},
	} {
		params := map[string]any{"name": c.tool, "arguments": c.args}
		alloc, raw := callAllocs(h, params)
		if limit := uint64((allocPerBodyByte + 4) * len(page)); alloc > limit {
			t.Errorf("%s: allocated %d bytes for a %d-byte page, over %d", c.tool, alloc, len(page), limit)
		}
		if s := string(raw); !strings.Contains(s, `"isError":true`) || !strings.Contains(s, "rs_bad_response") || !strings.Contains(s, fmt.Sprintf("more than %d", evidence.MaxPageItems)) {
			t.Errorf("%s: a page of 300,001 items is not refused as rs_bad_response: %.400s", c.tool, s)
		}
	}
}

// callAllocs makes the tools/call of params twice, the first to warm
// (first-use allocations are not the call's), and returns the bytes the
// process allocated during the second and its raw reply.
func callAllocs(h *harness, params map[string]any) (uint64, json.RawMessage) {
	h.rawRequest("tools/call", params)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	raw := h.rawRequest("tools/call", params)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, raw
}

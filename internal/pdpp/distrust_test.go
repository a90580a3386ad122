package pdpp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
)

// jsonRS answers every data request with body for the paths route selects
// (the token check is answered by faultyRS).
func jsonRS(route func(path string) string) http.Handler {
	return faultyRS(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(route(r.URL.Path)))
	})
}

// TestIncompleteRSBodiesAreRefused answers each data request 200 with a
// body that is not what the endpoint promises and checks every tool
// reports rs_bad_response instead of rendering an empty success.
func TestIncompleteRSBodiesAreRefused(t *testing.T) {
	bodies := []struct {
		name string
		body string
	}{
		{"null", `null`},
		{"empty object", `{}`},
		{"list", `[]`},
		{"string", `"ok"`},
		{"number", `0`},
	}
	for _, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			h := newHarness(t, jsonRS(func(string) string { return b.body }), tokClient)
			for _, c := range readCalls {
				if b.name == "empty object" && c.tool == "aggregate" {
					continue // an aggregation's members are all optional
				}
				r := h.call(t, c.tool, c.args)
				if !r.Res.IsError || r.errorCode() != "rs_bad_response" {
					t.Errorf("%s on a %s body: want rs_bad_response, got isError=%v code=%q:\n%.300s", c.tool, b.name, r.Res.IsError, r.errorCode(), r.Text)
				}
			}
		})
	}
}

// fieldWindowBody is an RS field window with the given window member.
func fieldWindowBody(window string) string {
	return `{"object":"field_window","record_id":"n1","connection_id":"cin_a","stream":"notes","field":{"path":"body","type":"string"},"window":` + window + `}`
}

// TestFieldWindowsAreChecked distrusts the RS's field windows: a window
// longer than asked is clamped to the request, with the next read where
// the kept text ends; impossible offsets (a start past the field's end or
// past the largest offset a read can name) and a missing window are
// rs_bad_response.
func TestFieldWindowsAreChecked(t *testing.T) {
	huge := strings.Repeat("a", 3_000_000)
	t.Run("longer than asked is clamped", func(t *testing.T) {
		body := fieldWindowBody(fmt.Sprintf(`{"text":%q,"start_chars":0,"end_chars":3000000,"total_chars":3000000,"limit_chars":100,"complete":true,"has_more":false}`, huge))
		h := newHarness(t, jsonRS(func(string) string { return body }), tokClient)
		h.log.reset()
		for _, detail := range []string{"compact", "full"} {
			r := h.mustOK(t, "read_record_field", map[string]any{"id": "cin_a/notes:n1", "field_path": "body", "limit_chars": 100, "detail": detail})
			got := structuredWindowText(t, r)
			if len(got) != 100 {
				t.Errorf("%s: window text is %d chars, asked for 100", detail, len(got))
			}
			w, _ := r.Structured["window"].(map[string]any)
			if w["end_chars"] != float64(100) || w["complete"] != false || w["has_more"] != true {
				t.Errorf("%s: clamped window state is wrong: %v", detail, w)
			}
			if _, args, ok := continuation(r.Structured["next"]); !ok || args["offset_chars"] != float64(100) {
				t.Errorf("%s: next read does not start at 100: %v", detail, r.Structured["next"])
			}
			if len(r.Text) > 4096 {
				t.Errorf("%s: content[] is %d bytes for a 100-char window", detail, len(r.Text))
			}
		}
	})
	bad := []struct{ name, body string }{
		{"no window", `{"object":"field_window","record_id":"n1","stream":"notes","field":{"path":"body"}}`},
		{"null window", fieldWindowBody(`null`)},
		{"negative start", fieldWindowBody(`{"text":"abc","start_chars":-3,"end_chars":0,"total_chars":10}`)},
		{"negative total", fieldWindowBody(`{"text":"abc","start_chars":0,"end_chars":3,"total_chars":-1}`)},
		{"inverted", fieldWindowBody(`{"text":"abc","start_chars":7,"end_chars":4,"total_chars":10}`)},
		{"starts past the end", fieldWindowBody(`{"text":"","start_chars":11,"end_chars":11,"total_chars":10}`)},
		{"starts past the largest offset", fieldWindowBody(`{"text":"abc","start_chars":1000000001,"end_chars":1000000004,"total_chars":2000000000}`)},
		{"match past the end", fieldWindowBody(`{"text":"abc","start_chars":0,"end_chars":3,"total_chars":3,"match_start_chars":2,"match_end_chars":4}`)},
		{"inverted match", fieldWindowBody(`{"text":"abc","start_chars":0,"end_chars":3,"total_chars":3,"match_start_chars":2,"match_end_chars":1}`)},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, jsonRS(func(string) string { return tc.body }), tokClient)
			r := h.call(t, "read_record_field", map[string]any{"id": "cin_a/notes:n1", "field_path": "body"})
			if !r.Res.IsError || r.errorCode() != "rs_bad_response" {
				t.Errorf("want rs_bad_response, got isError=%v code=%q:\n%.300s", r.Res.IsError, r.errorCode(), r.Text)
			}
		})
	}
}

// TestBudgetsHoldWhateverTheRSReturns answers with bodies built to break
// the reply budgets (many fields, long values, long ids, big JSON, binary
// text) and checks every compact result stays within its catalog budget
// and validates against its outputSchema.
func TestBudgetsHoldWhateverTheRSReturns(t *testing.T) {
	long := strings.Repeat("word ", 4000)                       // 20,000 chars of text
	b64 := strings.Repeat("QUJDRA", 2000)                       // binary-like text
	bigJSON := `[` + strings.Repeat(`{"k":"v"},`, 3000) + `{}]` // 30 KB of JSON
	record := func(i int) string {
		var f strings.Builder
		for j := range 40 {
			fmt.Fprintf(&f, `"f%02d":%q,`, j, long[:1000+j*10])
		}
		return fmt.Sprintf(`{"object":"record","id":"n%d-%s","stream":"notes","connection_id":"cin_a","data":{%s"body":%q,"blob":%q,"json":%s}}`,
			i, strings.Repeat("x", 200), f.String(), long, b64, bigJSON)
	}
	var recs []string
	for i := range 40 {
		recs = append(recs, record(i))
	}
	list := `{"object":"list","data":[` + strings.Join(recs, ",") + `],"has_more":true,"next_cursor":"c2","meta":{"note":` + mustJSON(long) + `}}`
	var hits []string
	for i := range 100 {
		hits = append(hits, fmt.Sprintf(`{"object":"search_result","record_key":"n%d-%s","stream":"notes","connection_id":"cin_a","matched_fields":["body"],"snippet":{"field":"body","text":%q},"evidence_excerpts":[{"field_path":"body","preview_text":%q,"truncated":true}]}`,
			i, strings.Repeat("y", 300), long, long))
	}
	search := `{"object":"list","data":[` + strings.Join(hits, ",") + `],"has_more":false,"next_cursor":null}`
	var groups []string
	for i := range 100 {
		groups = append(groups, fmt.Sprintf(`{"key":%q,"count":%d}`, strings.Repeat("k", 400)+fmt.Sprint(i), i))
	}
	agg := `{"object":"aggregation","stream":"notes","metric":"count","group_by":"body","groups":[` + strings.Join(groups, ",") + `],"other_count":0}`
	route := func(path string) string {
		switch {
		case strings.HasPrefix(path, "/v1/search"):
			return search
		case strings.HasSuffix(path, "/aggregate"):
			return agg
		case strings.HasSuffix(path, "/records"):
			return list
		case strings.HasSuffix(path, "/field-window"):
			return fieldWindowBody(fmt.Sprintf(`{"text":%q,"start_chars":0,"end_chars":20000,"total_chars":20000,"limit_chars":16384}`, long))
		}
		return record(1)
	}
	h := newHarness(t, jsonRS(route), tokClient)
	for _, c := range readCalls {
		args := withArg(c.args, "limit", 100)
		if c.tool == "fetch" || c.tool == "read_record_field" {
			args = c.args
		}
		t.Run(c.tool, func(t *testing.T) {
			raw := h.rawRequest("tools/call", map[string]any{"name": c.tool, "arguments": args})
			r := h.call(t, c.tool, args)
			if r.Res.IsError {
				t.Fatalf("%s failed:\n%.400s", c.tool, r.Text)
			}
			budget, _ := mcptools.ResultBudgetOf(c.tool)
			ex, _ := h.log.last(isDataPath)
			if limit := budget.Limit(len(ex.Body)); len(raw) > limit {
				t.Errorf("result is %d bytes, budget %d", len(raw), limit)
			}
			if strings.Contains(string(raw), b64[:400]) {
				t.Errorf("binary-like text inlined")
			}
			checkTruncationReported(t, r)
			var m map[string]any
			_ = json.Unmarshal(raw, &m)
			t.Logf("%d bytes", len(raw))
		})
	}
}

// TestErrorResultsFitTheirBudgets answers every data request with an RS
// error envelope built to break any budget (a 200 KB message, 5,000
// available connections, a 300 KB extra member) and checks each tool's
// error result stays within the tool's reply budget, keeps the RS's code
// and the connections that fit, and says how large the error was.
func TestErrorResultsFitTheirBudgets(t *testing.T) {
	var conns []string
	for i := range 5000 {
		conns = append(conns, fmt.Sprintf(`{"connection_id":"cin_%04d","display_name":"Account %d"}`, i, i))
	}
	envelope := `{"error":{"type":"invalid_request_error","code":"ambiguous_connection","message":` + mustJSON(strings.Repeat("too many ", 25000)) +
		`,"param":"connection_id","available_connections":[` + strings.Join(conns, ",") + `],"debug":` + mustJSON(strings.Repeat("d", 300000)) + `}}`
	rsh := faultyRS(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(envelope))
	})
	h := newHarness(t, rsh, tokClient)
	for _, c := range readCalls {
		t.Run(c.tool, func(t *testing.T) {
			raw := h.rawRequest("tools/call", map[string]any{"name": c.tool, "arguments": c.args})
			r := h.call(t, c.tool, c.args)
			if !r.Res.IsError || r.errorCode() != "ambiguous_connection" {
				t.Fatalf("want the RS's ambiguous_connection error, got isError=%v code=%q", r.Res.IsError, r.errorCode())
			}
			budget, _ := mcptools.ResultBudgetOf(c.tool)
			if limit := budget.Limit(0); len(raw) > limit {
				t.Errorf("error result is %d bytes, budget %d", len(raw), limit)
			}
			e := r.errorObject()
			if e["truncated"] != true || e["error_bytes"] != float64(len(envelope)-len(`{"error":}`)) {
				t.Errorf("the cut is not reported: truncated=%v error_bytes=%v", e["truncated"], e["error_bytes"])
			}
			if e["param"] != "connection_id" || e["type"] != "invalid_request_error" {
				t.Errorf("small members lost: %v", e)
			}
			kept, _ := e["available_connections"].([]any)
			if len(kept) == 0 || e["available_connections_total"] != float64(5000) {
				t.Errorf("kept %d connections of total %v", len(kept), e["available_connections_total"])
			}
			if !strings.Contains(r.Text, "cin_0000") || !strings.Contains(r.Text, "… and 4980 more") {
				t.Errorf("text does not list the first connections and the count of the rest:\n%.600s", r.Text)
			}
			if c.tool != "aggregate" && !strings.Contains(r.Text, `"connection_id":"cin_0000"`) {
				t.Errorf("text lost the retry call:\n%.600s", r.Text)
			}
		})
	}
	t.Run("resources/read", func(t *testing.T) {
		_, err := h.client.ReadResource(context.Background(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "pdpp://record/cin_a/notes:n1"}})
		if err == nil {
			t.Fatal("the read succeeded on an RS error")
		}
		if msg := err.Error(); len(msg) > 4096+512 || !strings.Contains(msg, "ambiguous_connection") || !strings.Contains(msg, `error_bytes`) {
			t.Errorf("resource error is %d bytes (bound 4096 plus its wrapper) or lost the code or the size:\n%.600s", len(msg), msg)
		}
	})
}

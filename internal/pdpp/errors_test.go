package pdpp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// rsErrorObject returns the `error` member of an RS error body.
func rsErrorObject(t testing.TB, body []byte) []byte {
	t.Helper()
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil || len(env.Error) == 0 {
		t.Fatalf("RS body is not an error envelope: %.300s", body)
	}
	return env.Error
}

// TestRSErrorsPreserved proves that RS error envelopes reach the client
// verbatim in structuredContent.error, with an actionable text.
func TestRSErrorsPreserved(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	cases := []struct {
		name   string
		token  string
		tool   string
		args   map[string]any
		status int
		code   string
		check  func(t *testing.T, r callResult)
	}{
		{name: "401 bad token", token: tokBad, tool: "search", args: map[string]any{"q": "needle5"},
			status: http.StatusUnauthorized, code: "context.active_false"},
		// Another unknown token: tokBad's 401 is now remembered for
		// tokencheck.RejectedTTL, so it would not reach the RS again.
		{name: "401 bad token on fetch", token: tokBad + "_2", tool: "fetch", args: map[string]any{"id": connMain + "/transcripts:tr-5"},
			status: http.StatusUnauthorized, code: "context.active_false"},
		{name: "401 stream outside the narrow grant", token: tokNarrow, tool: "query_records", args: map[string]any{"stream": "videos", "limit": 1},
			status: http.StatusUnauthorized, code: "context.stream_not_allowed"},
		{name: "404 unknown record", token: tokClient, tool: "fetch", args: map[string]any{"id": connMain + "/transcripts:does-not-exist"},
			status: http.StatusNotFound, code: "not_found"},
		{name: "409 ambiguous record", token: tokClient, tool: "fetch", args: map[string]any{"id": "transcripts:tr-5"},
			status: http.StatusConflict, code: "ambiguous_connection", check: func(t *testing.T, r callResult) {
				checkAmbiguous(t, h, r, connMain+"/transcripts:tr-5")
			}},
		{name: "409 ambiguous field window", token: tokClient, tool: "read_record_field", args: map[string]any{"stream": "transcripts", "record_id": "tr-5", "field_path": "text", "limit_chars": 100},
			status: http.StatusConflict, code: "ambiguous_connection", check: func(t *testing.T, r callResult) {
				checkAmbiguous(t, h, r, connMain+"/transcripts:tr-5")
			}},
		{name: "400 invalid cursor", token: tokClient, tool: "query_records", args: map[string]any{"stream": "transcripts", "connection_id": connMain, "cursor": "garbage"},
			status: http.StatusBadRequest, code: "invalid_cursor"},
		{name: "422 field not text", token: tokClient, tool: "read_record_field", args: map[string]any{"id": connMain + "/videos:vid-5", "field_path": "duration_seconds"},
			status: http.StatusUnprocessableEntity, code: "field_not_text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.token.Store(tc.token)
			defer h.token.Store(tokClient)
			h.log.reset()
			r := h.call(t, tc.tool, tc.args)
			if !r.Res.IsError {
				t.Fatalf("want an error result, got:\n%s", r.Text)
			}
			ex := h.log.exchanges()
			if len(ex) == 0 {
				t.Fatal("no request reached the RS")
			}
			last := ex[len(ex)-1]
			if last.Status != tc.status {
				t.Fatalf("last RS answer was %d to %s, want %d", last.Status, last.Line, tc.status)
			}
			if !jsonEqual(t, mustRaw(r.Structured["error"]), rsErrorObject(t, last.Body)) {
				t.Errorf("structuredContent.error is not the RS error verbatim:\nadapter %s\nRS      %s", mustRaw(r.Structured["error"]), rsErrorObject(t, last.Body))
			}
			if r.errorCode() != tc.code {
				t.Errorf("code = %q, want %q", r.errorCode(), tc.code)
			}
			msg, _ := r.errorObject()["message"].(string)
			if !strings.Contains(r.Text, tc.code) || !strings.Contains(r.Text, msg) {
				t.Errorf("text does not name code and message:\n%s", r.Text)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// checkAmbiguous checks that a 409 lists the connections and shows a retry
// call that works when made as shown.
func checkAmbiguous(t *testing.T, h *harness, r callResult, wantID string) {
	t.Helper()
	conns, _ := r.errorObject()["available_connections"].([]any)
	if len(conns) < 2 {
		t.Fatalf("available_connections = %v", conns)
	}
	for _, c := range conns {
		id, _ := c.(map[string]any)["connection_id"].(string)
		if !strings.Contains(r.Text, id) {
			t.Errorf("text does not list connection %s:\n%s", id, r.Text)
		}
	}
	retry, ok := callAfter(r.Text, "e.g. ")
	if !ok {
		t.Fatalf("no retry call in text:\n%s", r.Text)
	}
	if retry.Tool != r.Tool || retry.Args["connection_id"] == nil {
		t.Fatalf("retry call %s %s does not name the tool and a connection_id", retry.Tool, retry.Raw)
	}
	again := h.mustOK(t, retry.Tool, retry.Args)
	if again.Structured["id"] != wantID {
		t.Errorf("retry read %v, want %s", again.Structured["id"], wantID)
	}
}

// TestAdapterErrorsNeverReachRS proves that arguments the adapter refuses
// produce a typed adapter_error and that no request reaches a data endpoint.
func TestAdapterErrorsNeverReachRS(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	tr := connMain + "/transcripts:tr-5"
	cases := []struct {
		name  string
		tool  string
		args  map[string]any
		code  string // "" accepts any code
		param string // "" accepts any param
	}{
		{"fetch empty id", "fetch", map[string]any{"id": ""}, "", "id"},
		{"fetch empty connection segment", "fetch", map[string]any{"id": "/transcripts:tr-5"}, "invalid_id", ""},
		{"fetch empty stream segment", "fetch", map[string]any{"id": connMain + "/:tr-5"}, "invalid_id", ""},
		{"fetch empty record segment", "fetch", map[string]any{"id": connMain + "/transcripts:"}, "invalid_id", ""},
		{"fetch no colon", "fetch", map[string]any{"id": "transcripts-tr-5"}, "invalid_id", ""},
		{"fetch dot-dot record", "fetch", map[string]any{"id": connMain + "/transcripts:.."}, "invalid_id", ""},
		{"fetch dot-dot stream", "fetch", map[string]any{"id": connMain + "/..:tr-5"}, "invalid_id", ""},
		{"fetch slash in record", "fetch", map[string]any{"id": connMain + "/transcripts:a/b"}, "invalid_id", ""},
		{"fetch encoded traversal", "fetch", map[string]any{"id": "transcripts:%2e%2e%2fetc"}, "invalid_id", ""},
		{"fetch extra slash", "fetch", map[string]any{"id": "a/b/transcripts:tr-5"}, "invalid_id", ""},
		{"fetch control char", "fetch", map[string]any{"id": "transcripts:tr-5\x00"}, "invalid_format", "id"},
		{"fetch newline", "fetch", map[string]any{"id": "transcripts:tr\n-5"}, "invalid_format", "id"},
		{"fetch traversal URI", "fetch", map[string]any{"id": "pdpp://record/../transcripts/tr-5"}, "invalid_id", ""},
		{"fetch conflicting connection_id", "fetch", map[string]any{"id": tr, "connection_id": connPeer}, "conflicting_connection_id", "connection_id"},
		{"fetch invalid connection_id", "fetch", map[string]any{"id": "transcripts:tr-5", "connection_id": "../x"}, "invalid_format", "connection_id"},
		{"read conflicting connection_id", "read_record_field", map[string]any{"id": tr, "connection_id": connPeer, "field_path": "text"}, "conflicting_connection_id", "connection_id"},
		{"read dot-dot record", "read_record_field", map[string]any{"stream": "transcripts", "record_id": "..", "field_path": "text"}, "invalid_format", "record_id"},
		{"read slash record", "read_record_field", map[string]any{"stream": "transcripts", "record_id": "a/b", "field_path": "text"}, "invalid_format", "record_id"},
		{"read id against stream", "read_record_field", map[string]any{"id": tr, "stream": "videos", "field_path": "text"}, "", ""},
		{"read no record", "read_record_field", map[string]any{"field_path": "text"}, "", "id"},
		{"read bad field path", "read_record_field", map[string]any{"id": tr, "field_path": "../text"}, "", ""},
		{"read limit_chars over max", "read_record_field", map[string]any{"id": tr, "field_path": "text", "limit_chars": 16385}, "", "limit_chars"},
		{"read offset and q", "read_record_field", map[string]any{"id": tr, "field_path": "text", "q": "x", "offset_chars": 5}, "", ""},
		{"read before_chars without q", "read_record_field", map[string]any{"id": tr, "field_path": "text", "before_chars": 5}, "", ""},
		{"read garbage cursor", "read_record_field", map[string]any{"cursor": "garbage", "field_path": "text"}, "", ""},
		{"query filter as string", "query_records", map[string]any{"stream": "transcripts", "filter": "language=en"}, "", "filter"},
		{"query filter as JSON string", "query_records", map[string]any{"stream": "transcripts", "filter": `{"language":"en"}`}, "", "filter"},
		{"query filter empty object", "query_records", map[string]any{"stream": "transcripts", "filter": map[string]any{}}, "", "filter"},
		{"query filter array", "query_records", map[string]any{"stream": "transcripts", "filter": []any{"language"}}, "", "filter"},
		{"query filter bracket key", "query_records", map[string]any{"stream": "transcripts", "filter": map[string]any{"created_at[gte]": "2026-01-01"}}, "", "filter"},
		{"query filter unknown operator", "query_records", map[string]any{"stream": "transcripts", "filter": map[string]any{"created_at": map[string]any{"between": "2026"}}}, "", "filter"},
		{"search filter as string", "search", map[string]any{"q": "x", "streams": []string{"transcripts"}, "filter": "language=en"}, "", "filter"},
		{"search filter bracket key", "search", map[string]any{"q": "x", "streams": []string{"transcripts"}, "filter": map[string]any{"language[eq]": "en"}}, "", "filter"},
		{"aggregate filter empty object", "aggregate", map[string]any{"stream": "transcripts", "metric": "count", "filter": map[string]any{}}, "", "filter"},
		{"expand_limit as string", "query_records", map[string]any{"stream": "transcripts", "expand": []string{"video"}, "expand_limit": "3"}, "", "expand_limit"},
		{"expand_limit empty object", "query_records", map[string]any{"stream": "transcripts", "expand": []string{"video"}, "expand_limit": map[string]any{}}, "", "expand_limit"},
		{"expand_limit zero", "query_records", map[string]any{"stream": "transcripts", "expand": []string{"video"}, "expand_limit": map[string]any{"video": 0}}, "", "expand_limit"},
		{"expand_limit not a number", "query_records", map[string]any{"stream": "transcripts", "expand": []string{"video"}, "expand_limit": map[string]any{"video": "x"}}, "", "expand_limit"},
		{"expand_limit bracket key", "query_records", map[string]any{"stream": "transcripts", "expand": []string{"video"}, "expand_limit": map[string]any{"video[0]": 1}}, "", "expand_limit"},
		{"expand_limit relation not expanded", "fetch", map[string]any{"id": tr, "expand_limit": map[string]any{"video": 1}}, "", "expand_limit"},
		{"query limit 101", "query_records", map[string]any{"stream": "transcripts", "limit": 101}, "out_of_range", "limit"},
		{"query limit 0", "query_records", map[string]any{"stream": "transcripts", "limit": 0}, "out_of_range", "limit"},
		{"query limit as string", "query_records", map[string]any{"stream": "transcripts", "limit": "10"}, "", ""},
		{"search limit 101", "search", map[string]any{"q": "x", "limit": 101}, "out_of_range", "limit"},
		{"query unknown argument", "query_records", map[string]any{"stream": "transcripts", "bogus": 1}, "unknown_argument", ""},
		{"search unknown argument", "search", map[string]any{"q": "x", "token": "y"}, "unknown_argument", ""},
		{"fetch unknown argument", "fetch", map[string]any{"id": tr, "field": "text"}, "unknown_argument", ""},
		{"search missing q", "search", map[string]any{}, "missing_argument", "q"},
		{"search bad mode", "search", map[string]any{"q": "x", "mode": "fuzzy"}, "invalid_enum", "mode"},
		{"schema detail full without stream", "schema", map[string]any{"detail": "full"}, "", "detail"},
		{"aggregate group_by and group_by_time", "aggregate", map[string]any{"stream": "videos", "metric": "count", "group_by": "codec", "group_by_time": "created_at", "granularity": "month"}, "", ""},
		{"aggregate group_by_time without granularity", "aggregate", map[string]any{"stream": "videos", "metric": "count", "group_by_time": "created_at"}, "", ""},
		{"aggregate sum without field", "aggregate", map[string]any{"stream": "videos", "metric": "sum"}, "", "field"},
		{"aggregate unknown metric", "aggregate", map[string]any{"stream": "videos", "metric": "median"}, "invalid_enum", "metric"},
		{"hybrid search with cursor", "search", map[string]any{"q": "x", "mode": "hybrid", "cursor": "abc"}, "", "cursor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.log.reset()
			r := h.call(t, tc.tool, tc.args)
			if !r.Res.IsError {
				t.Fatalf("want an error result, got:\n%.500s", r.Text)
			}
			e := r.errorObject()
			if e["type"] != "adapter_error" {
				t.Errorf("error type = %v, want adapter_error: %v", e["type"], e)
			}
			if tc.code != "" && r.errorCode() != tc.code {
				t.Errorf("code = %q, want %q (%v)", r.errorCode(), tc.code, e["message"])
			}
			if tc.param != "" && e["param"] != tc.param {
				t.Errorf("param = %v, want %q", e["param"], tc.param)
			}
			if msg, _ := e["message"].(string); msg == "" || !strings.Contains(r.Text, r.errorCode()) {
				t.Errorf("error lacks a message or the text lacks the code:\n%s", r.Text)
			}
			if data := h.log.matching(isDataPath); len(data) > 0 {
				t.Errorf("refused call still reached RS data endpoints: %v", data)
			}
		})
	}
}

// TestOwnerTokenRefused proves that with an owner token every tool and
// resource fails with owner_token_refused and no data endpoint is called.
func TestOwnerTokenRefused(t *testing.T) {
	h := newDemoHarness(t, tokOwner)
	tr := connMain + "/transcripts:tr-5"
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"schema", map[string]any{}},
		{"schema", map[string]any{"stream": "transcripts", "detail": "full"}},
		{"query_records", map[string]any{"stream": "transcripts", "limit": 1}},
		{"query_records", map[string]any{"stream": "transcripts", "expand": []string{"video"}}},
		{"aggregate", map[string]any{"stream": "transcripts", "metric": "count"}},
		{"search", map[string]any{"q": "needle5"}},
		{"search", map[string]any{"q": "needle5", "mode": "semantic"}},
		{"search", map[string]any{"q": "needle5", "mode": "hybrid"}},
		{"fetch", map[string]any{"id": tr}},
		{"read_record_field", map[string]any{"id": tr, "field_path": "text"}},
	}
	onlySchema := func(t *testing.T) {
		t.Helper()
		for _, line := range h.log.requests() {
			if !strings.HasPrefix(line, "GET /v1/schema") {
				t.Errorf("owner token reached %s", line)
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+mustJSON(tc.args), func(t *testing.T) {
			h.log.reset()
			r := h.call(t, tc.tool, tc.args)
			if !r.Res.IsError || r.errorCode() != "owner_token_refused" {
				t.Fatalf("want owner_token_refused, got:\n%s", r.Text)
			}
			if r.errorObject()["type"] != "adapter_error" {
				t.Errorf("type = %v", r.errorObject()["type"])
			}
			if !strings.Contains(r.Text, "pdpp connect") {
				t.Errorf("refusal does not name the fix:\n%s", r.Text)
			}
			onlySchema(t)
			if tc.tool == "schema" && strings.Contains(r.RawStruct, "granted_connections") {
				t.Errorf("owner refusal leaks the schema document")
			}
		})
	}
	for _, uri := range []string{
		"pdpp://stream/transcripts",
		"pdpp://record/" + connMain + "%2Ftranscripts%3Atr-5",
		handles.FieldWindowURI(handles.WindowRef{Record: handles.RecordRef{ConnectionID: connMain, Stream: "transcripts", RecordID: "tr-5"}, Field: "text"}),
		"pdpp://blob/blob_f47d6180c644bace5ef633ba",
	} {
		t.Run("resource "+uri, func(t *testing.T) {
			h.log.reset()
			_, err := h.readResource(t, uri)
			if err == nil || !strings.Contains(err.Error(), "owner_token_refused") {
				t.Fatalf("resources/read with an owner token: err = %v", err)
			}
			onlySchema(t)
		})
	}
}

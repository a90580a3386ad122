package pdpp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// TestExpandGate covers seed 004's expand gate against the demo RS, whose
// schema advertises expand_capabilities on transcripts (video) and none on
// videos.
func TestExpandGate(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	refused := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"query_records on videos", "query_records", map[string]any{"stream": "videos", "expand": []string{"video"}}},
		{"query_records on videos with connection", "query_records", map[string]any{"stream": "videos", "connection_id": connMain, "expand": []string{"transcripts"}, "expand_limit": map[string]any{"transcripts": 2}}},
		{"fetch on videos", "fetch", map[string]any{"id": connMain + "/videos:vid-5", "expand": []string{"transcripts"}}},
		{"fetch on notes", "fetch", map[string]any{"id": connNotes + "/notes:note-2", "expand": []string{"attachment"}}},
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			h.log.reset()
			r := h.call(t, tc.tool, tc.args)
			if !r.Res.IsError || r.errorCode() != "invalid_expand" {
				t.Fatalf("want invalid_expand, got:\n%s", r.Text)
			}
			e := r.errorObject()
			msg, _ := e["message"].(string)
			stream, _ := tc.args["stream"].(string)
			if stream == "" {
				stream = strings.SplitN(strings.SplitN(tc.args["id"].(string), "/", 2)[1], ":", 2)[0]
			}
			if e["type"] != "adapter_error" || !strings.Contains(msg, `"`+stream+`"`) || !strings.Contains(msg, "/v1/schema") || !strings.Contains(msg, "expand_capabilities") {
				t.Errorf("invalid_expand does not name the stream %q and the schema source: %v", stream, e)
			}
			if rec := h.log.matching(isRecordsPath); len(rec) > 0 {
				t.Errorf("records endpoint called despite invalid_expand: %v", rec)
			}
			checkScopedSchemaRead(t, h, stream, tc.args)
		})
	}
	forwarded := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"query_records on transcripts", "query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 2, "expand": []string{"video"}, "detail": "full"}},
		{"query_records on transcripts with expand_limit", "query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 1, "expand": []string{"video"}, "expand_limit": map[string]any{"video": 1}, "detail": "full"}},
		{"fetch on transcripts", "fetch", map[string]any{"id": connMain + "/transcripts:tr-5", "expand": []string{"video"}}},
	}
	for _, tc := range forwarded {
		t.Run("forwarded/"+tc.name, func(t *testing.T) {
			h.log.reset()
			r := h.mustOK(t, tc.tool, tc.args)
			ex, ok := h.log.last(isRecordsPath)
			if !ok {
				t.Fatalf("records endpoint not called: %v", h.log.requests())
			}
			q, _ := url.ParseQuery(ex.Query)
			if q.Get("expand") != "video" {
				t.Errorf("records call lacks expand=video: %s", ex.Line)
			}
			if lim, ok := tc.args["expand_limit"]; ok && q.Get("expand_limit[video]") != fmt.Sprint(lim.(map[string]any)["video"]) {
				t.Errorf("records call lacks expand_limit[video]: %s", ex.Line)
			}
			if tc.tool == "query_records" && !jsonEqual(t, mustRaw(r.Structured["data"]), ex.Body) {
				t.Errorf("the RS response did not reach the client unchanged")
			}
			if !strings.Contains(string(ex.Body), `"expanded"`) {
				t.Errorf("RS did not expand (is the demo RS still advertising video?): %.300s", ex.Body)
			}
		})
	}
	t.Run("fail open when the schema read fails", func(t *testing.T) {
		stop := h.log.injectFault(func(r *http.Request) bool { return r.URL.Path == "/v1/schema" }, http.StatusInternalServerError,
			`{"error":{"type":"api_error","code":"internal_error","message":"schema store unavailable"}}`)
		defer stop()
		h.log.reset()
		r := h.call(t, "query_records", map[string]any{"stream": "videos", "connection_id": connMain, "expand": []string{"video"}})
		if r.Res.IsError && r.errorObject()["type"] == "adapter_error" {
			t.Errorf("adapter refused while the schema was unavailable: %s", r.Text)
		}
		if rec := h.log.matching(isRecordsPath); len(rec) != 1 || !strings.Contains(rec[0], "expand=video") {
			t.Errorf("records endpoint not called once with expand: %v", rec)
		}
		if r.Res.IsError {
			// The RS's own verdict reaches the client verbatim.
			ex, _ := h.log.last(isRecordsPath)
			if !jsonEqual(t, mustRaw(r.Structured["error"]), rsErrorObject(t, ex.Body)) {
				t.Errorf("RS verdict not passed through verbatim")
			}
		}
	})
	t.Run("defer to the RS for a stream the schema does not list", func(t *testing.T) {
		h.log.reset()
		r := h.call(t, "query_records", map[string]any{"stream": "nope", "expand": []string{"video"}})
		if rec := h.log.matching(isRecordsPath); len(rec) != 1 {
			t.Fatalf("records endpoint not called for an unknown stream: %v", h.log.requests())
		}
		if !r.Res.IsError || r.errorObject()["type"] == "adapter_error" {
			t.Errorf("want the RS's own error for an ungranted stream, got:\n%s", r.Text)
		}
	})
}

// checkScopedSchemaRead checks that the gate read the schema for the stream
// (and the connection when one was named).
func checkScopedSchemaRead(t *testing.T, h *harness, stream string, args map[string]any) {
	t.Helper()
	for _, ex := range h.log.exchanges() {
		if ex.Path != "/v1/schema" {
			continue
		}
		q, _ := url.ParseQuery(ex.Query)
		if q.Get("stream") != stream {
			continue
		}
		if conn, _ := args["connection_id"].(string); conn != "" && q.Get("connection_id") != conn {
			t.Errorf("gate schema read not scoped to connection %s: %s", conn, ex.Line)
		}
		return
	}
	t.Errorf("no schema read scoped to stream %s: %v", stream, h.log.requests())
}

// schemaRS is an RS whose schema document the test controls: stream videos
// advertises the relation "channel" only while expandable is true; stream
// ghost is never listed. Records endpoints answer a fixed page.
type schemaRS struct {
	expandable atomic.Bool
}

func (s *schemaRS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	caps := []any{}
	if s.expandable.Load() {
		caps = append(caps, map[string]any{"name": "channel", "relation": "channel", "target_stream": "channels", "cardinality": "has_one", "usable": true})
	}
	switch {
	case r.URL.Path == "/v1/schema":
		doc := map[string]any{
			"object": "schema",
			"bearer": map[string]any{"token_kind": "client"},
			"connectors": []any{map[string]any{
				"connector_id": "tube", "granted_connections": []any{map[string]any{"connection_id": "cin_tube"}},
				"streams": []any{map[string]any{"name": "videos", "field_capabilities": map[string]any{"id": "t=string,eq"}, "expand_capabilities": caps}},
			}},
		}
		_ = json.NewEncoder(w).Encode(doc)
	case strings.HasSuffix(r.URL.Path, "/records"):
		stream := strings.Split(r.URL.Path, "/")[3]
		fmt.Fprintf(w, `{"object":"list","data":[{"object":"record","id":"v-1","stream":%q,"connection_id":"cin_tube","data":{"id":"v-1"}}],"has_more":false,"next_cursor":null,"meta":{"warnings":[]}}`, stream)
	case strings.Contains(r.URL.Path, "/records/"):
		parts := strings.Split(r.URL.Path, "/")
		fmt.Fprintf(w, `{"object":"record","id":%q,"stream":%q,"connection_id":"cin_tube","data":{"id":%q}}`, parts[5], parts[3], parts[5])
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"type":"invalid_request_error","code":"not_found","message":"no such route"}}`)
	}
}

// TestExpandGateFollowsLiveSchema proves the gate enforces the schema
// document as it is at each call, with no restart or reconfiguration.
func TestExpandGateFollowsLiveSchema(t *testing.T) {
	rs := &schemaRS{}
	h := newHarness(t, rs, "live-schema-token")
	steps := []struct {
		name       string
		expandable bool
		tool       string
		args       map[string]any
		refused    bool
	}{
		{"no capability: query refused", false, "query_records", map[string]any{"stream": "videos", "expand": []string{"channel"}}, true},
		{"no capability: fetch refused", false, "fetch", map[string]any{"id": "cin_tube/videos:v-1", "expand": []string{"channel"}}, true},
		{"capability added: query forwarded", true, "query_records", map[string]any{"stream": "videos", "expand": []string{"channel"}}, false},
		{"capability added: fetch forwarded", true, "fetch", map[string]any{"id": "cin_tube/videos:v-1", "expand": []string{"channel"}}, false},
		{"capability removed again: query refused", false, "query_records", map[string]any{"stream": "videos", "expand": []string{"channel"}}, true},
		{"stream absent from schema: forwarded", false, "query_records", map[string]any{"stream": "ghost", "expand": []string{"channel"}}, false},
		{"no expand: never gated", false, "query_records", map[string]any{"stream": "videos"}, false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			rs.expandable.Store(st.expandable)
			h.log.reset()
			r := h.call(t, st.tool, st.args)
			records := h.log.matching(isRecordsPath)
			if st.refused {
				if !r.Res.IsError || r.errorCode() != "invalid_expand" {
					t.Fatalf("want invalid_expand, got:\n%s", r.Text)
				}
				if len(records) > 0 {
					t.Errorf("records endpoint called: %v", records)
				}
				return
			}
			if r.Res.IsError {
				t.Fatalf("want success, got:\n%s", r.Text)
			}
			if len(records) != 1 {
				t.Fatalf("records endpoint calls = %v", records)
			}
			if _, ok := st.args["expand"]; ok && !strings.Contains(records[0], "expand=channel") {
				t.Errorf("expand not forwarded: %s", records[0])
			}
		})
	}
}

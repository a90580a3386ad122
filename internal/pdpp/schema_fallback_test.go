package pdpp_test

import (
	"net/http"
	"strings"
	"testing"
)

// fullOnlySchemaRS is an RS that refuses view=compact (as an older RS would)
// and serves only the full schema document.
func fullOnlySchemaRS() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/schema" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"type":"api_error","code":"not_found","message":"no such route"}}`))
			return
		}
		if r.URL.Query().Get("view") != "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"invalid_request","message":"unknown parameter view","param":"view"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"schema","bearer":{"token_kind":"client"},"connectors":[{"connector_id":"mail",
			"granted_connections":[{"connection_id":"cin_mail","display_name":"Mail"}],
			"streams":[{"name":"messages","primary_key":["id"],"expand_capabilities":[],
			"field_capabilities":{
				"subject":{"granted":true,"role":"primary-title","lexical_search":{"declared":true,"usable":true},"semantic_search":{"declared":false,"usable":false}},
				"sent_at":{"granted":true,"filter":{"operators":["gte","lt"]},"aggregation":{"max":{"declared":true,"usable":true}}},
				"body":{"granted":false}}}]}]}`))
	})
}

// TestSchemaCompactFallback: when the RS rejects view=compact, schema reads
// the full document and projects it to the compact shape locally.
func TestSchemaCompactFallback(t *testing.T) {
	h := newHarness(t, fullOnlySchemaRS(), "tok")
	r := h.mustOK(t, "schema", map[string]any{})
	data, _ := r.Structured["data"].(map[string]any)
	if data["detail"] != "compact" {
		t.Fatalf("structured data is not the compact projection: %s", r.RawStruct)
	}
	conns := data["connectors"].([]any)
	fields := conns[0].(map[string]any)["streams"].([]any)[0].(map[string]any)["field_capabilities"].(map[string]any)
	want := map[string]string{"subject": "role:primary-title search", "sent_at": "filter:gte|lt agg:max", "body": "not granted"}
	for f, w := range want {
		if fields[f] != w {
			t.Errorf("field %s projected as %q, want %q", f, fields[f], w)
		}
	}
	if !strings.Contains(r.Text, "stream messages: fields body[not granted]") || !strings.Contains(r.Text, "cin_mail (Mail)") {
		t.Fatalf("schema text:\n%s", r.Text)
	}
	// detail=full asks for the full document directly.
	full := h.mustOK(t, "schema", map[string]any{"stream": "messages", "detail": "full"})
	if d, _ := full.Structured["data"].(map[string]any); d["detail"] == "compact" {
		t.Fatal("detail=full must not be projected")
	}
}

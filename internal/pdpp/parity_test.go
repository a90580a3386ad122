package pdpp_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// referenceWindowHandle is the reference adapter's field-window handle for
// js: "pdpp://field-window/" + base64url (no padding) of the JSON.
func referenceWindowHandle(js string) string {
	return "pdpp://field-window/" + base64.RawURLEncoding.EncodeToString([]byte(js))
}

// TestReferenceAdapterHandles: the handles the reference adapter hands out
// (a result id pasted after pdpp://record/, its field-window handle) read
// the same record or window as our own forms, in the tools and in
// resources/read; malformed ones are refused before any RS request.
func TestReferenceAdapterHandles(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	id := connMain + "/transcripts:tr-5"
	pasted := "pdpp://record/" + id
	fetched := h.mustOK(t, "fetch", map[string]any{"id": id})

	t.Run("pasted result id", func(t *testing.T) {
		r := h.mustOK(t, "fetch", map[string]any{"id": pasted})
		if !jsonEqual(t, []byte(r.RawStruct), []byte(fetched.RawStruct)) {
			t.Errorf("fetch %s differs from fetch %s", pasted, id)
		}
		ex, ok := h.log.last(isRecordsPath)
		if !ok || ex.Path != "/v1/streams/transcripts/records/tr-5" || !strings.Contains(ex.Query, "connection_id="+connMain) {
			t.Errorf("RS request for the pasted id = %+v", ex)
		}
		got := h.readResourceJSON(t, pasted)
		if !jsonEqual(t, mustRaw(got), withoutDetail(t, fetched.RawStruct)) {
			t.Errorf("resources/read %s differs from fetch %s", pasted, id)
		}
		w := h.mustOK(t, "read_record_field", map[string]any{"id": pasted, "field_path": "text", "limit_chars": 200})
		want := h.mustOK(t, "read_record_field", map[string]any{"id": id, "field_path": "text", "limit_chars": 200})
		if w.RawStruct != want.RawStruct {
			t.Errorf("read_record_field by pasted id differs:\n%s\n%s", w.RawStruct, want.RawStruct)
		}
	})

	handle := referenceWindowHandle(`{"v":1,"kind":"field-window","connection_id":"` + connMain + `","stream":"transcripts","record_id":"tr-5","field_path":"text","offset_chars":4096,"limit_chars":1000}`)
	want := h.mustOK(t, "read_record_field", map[string]any{"id": id, "field_path": "text", "offset_chars": 4096, "limit_chars": 1000})
	// A field-window resource carries its text: read_record_field's full detail.
	wantFull := h.mustOK(t, "read_record_field", map[string]any{"id": id, "field_path": "text", "offset_chars": 4096, "limit_chars": 1000, "detail": "full"})
	t.Run("field-window handle as cursor", func(t *testing.T) {
		r := h.mustOK(t, "read_record_field", map[string]any{"cursor": handle, "field_path": "text"})
		if r.RawStruct != want.RawStruct {
			t.Errorf("cursor read differs from the offset read:\n%s\n%s", r.RawStruct, want.RawStruct)
		}
	})
	t.Run("field-window handle in resources/read", func(t *testing.T) {
		got := h.readResourceJSON(t, handle)
		if !jsonEqual(t, mustRaw(got), withoutDetail(t, wantFull.RawStruct)) {
			t.Errorf("resource differs from read_record_field with detail full:\n%s\n%s", mustRaw(got), wantFull.RawStruct)
		}
	})
	t.Run("field-window handle as id", func(t *testing.T) {
		r := h.mustOK(t, "fetch", map[string]any{"id": handle})
		if !jsonEqual(t, []byte(r.RawStruct), []byte(fetched.RawStruct)) {
			t.Errorf("fetch by field-window handle differs from fetch %s", id)
		}
		// read_record_field reads the window the handle names, not the
		// record's first window.
		w := h.mustOK(t, "read_record_field", map[string]any{"id": handle, "field_path": "text"})
		if w.RawStruct != want.RawStruct {
			t.Errorf("read_record_field with the handle as id differs from the offset read:\n%s\n%s", w.RawStruct, want.RawStruct)
		}
	})

	bad := []struct {
		name string
		js   string
	}{
		{"traversal", `{"v":1,"kind":"field-window","stream":"transcripts","record_id":"..","field_path":"text"}`},
		{"unknown key", `{"v":1,"kind":"field-window","stream":"transcripts","record_id":"tr-5","field_path":"text","x":1}`},
		{"limit over the ceiling", `{"v":1,"kind":"field-window","stream":"transcripts","record_id":"tr-5","field_path":"text","limit_chars":99999}`},
	}
	for _, tc := range bad {
		t.Run("malformed "+tc.name, func(t *testing.T) {
			h.log.reset()
			u := referenceWindowHandle(tc.js)
			r := h.call(t, "read_record_field", map[string]any{"cursor": u, "field_path": "text"})
			if !r.Res.IsError || r.errorCode() != "invalid_cursor" {
				t.Errorf("read_record_field with %s: code %q, want invalid_cursor:\n%s", tc.name, r.errorCode(), r.Text)
			}
			if _, err := h.readResource(t, u); err == nil {
				t.Errorf("resources/read of a malformed handle succeeded")
			}
			if reqs := h.log.matching(isDataPath); len(reqs) != 0 {
				t.Errorf("malformed handle reached the RS: %v", reqs)
			}
		})
	}
	t.Run("oversized", func(t *testing.T) {
		h.log.reset()
		u := "pdpp://field-window/" + strings.Repeat("A", 5000)
		r := h.call(t, "read_record_field", map[string]any{"cursor": u, "field_path": "text"})
		if !r.Res.IsError {
			t.Errorf("oversized handle accepted")
		}
		req := mcp.ReadResourceRequest{}
		req.Params.URI = u
		if _, err := h.client.ReadResource(t.Context(), req); err == nil {
			t.Errorf("resources/read of an oversized handle succeeded")
		}
		if reqs := h.log.matching(isDataPath); len(reqs) != 0 {
			t.Errorf("oversized handle reached the RS: %v", reqs)
		}
	})
}

// subscriptionReplayRS answers the event-subscription routes with
// reference-RS shaped fixtures: get/update return a subscription whose
// filter (scope.filters.streams) is narrower than the grant
// (scope.streams); delete answers 404 not_found, as a second DELETE does.
func subscriptionReplayRS(t *testing.T) http.Handler {
	sub, err := os.ReadFile(filepath.Join("testdata", "parity", "event-subscription-filtered.json"))
	if err != nil {
		t.Fatal(err)
	}
	notFound, err := os.ReadFile(filepath.Join("testdata", "parity", "event-subscription-delete-404.json"))
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/schema":
			// The token check reads the bearer's kind first.
			_, _ = w.Write([]byte(`{"object":"schema","bearer":{"token_kind":"client"},"streams":[]}`))
		case r.URL.Path != "/v1/event-subscriptions/"+replaySubID:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write(notFound)
		case r.Method == http.MethodGet:
			_, _ = w.Write(sub)
		case r.Method == http.MethodPatch:
			_, _ = w.Write([]byte(`{"subscription":` + string(sub) + `}`))
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write(notFound)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
}

const replaySubID = "sub_7f3a9c21d4e5b6a7c8d9e0f1"

// TestEventSubscriptionParity: get and update print the subscription's own
// stream filter, not the grant's streams; a delete the RS answers with
// 404 not_found (a second delete) reports the subscription as gone.
func TestEventSubscriptionParity(t *testing.T) {
	t.Run("replayed reference answers", func(t *testing.T) {
		h := newHarness(t, subscriptionReplayRS(t), tokClient)
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"get_event_subscription", map[string]any{"subscription_id": replaySubID}},
			{"update_event_subscription", map[string]any{"subscription_id": replaySubID, "enabled": true}},
		} {
			r := h.mustOK(t, tc.tool, tc.args)
			if !strings.Contains(r.Text, "streams: transcripts\n") || strings.Contains(r.Text, "videos") {
				t.Errorf("%s text does not show the filter (transcripts) alone:\n%s", tc.tool, r.Text)
			}
		}
		del := h.mustOK(t, "delete_event_subscription", map[string]any{"subscription_id": replaySubID})
		if del.Structured["deleted"] != true || !strings.Contains(del.Text, "already deleted") || !strings.Contains(del.Text, "404 not_found") {
			t.Errorf("delete answered 404: %s\n%s", del.RawStruct, del.Text)
		}
	})
	t.Run("demo RS", func(t *testing.T) {
		h := newDemoHarness(t, tokClient)
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
		t.Cleanup(hook.Close)
		created := h.mustOK(t, "create_event_subscription", map[string]any{"callback_url": hook.URL + "/hook", "streams": []string{"transcripts"}})
		id := structuredString(created.Structured, "subscription", "subscription_id")
		got := h.mustOK(t, "get_event_subscription", map[string]any{"subscription_id": id})
		if !strings.Contains(got.Text, "streams: transcripts\n") {
			t.Errorf("get text does not show the filter:\n%s", got.Text)
		}
		all := h.mustOK(t, "create_event_subscription", map[string]any{"callback_url": hook.URL + "/all"})
		allID := structuredString(all.Structured, "subscription", "subscription_id")
		gotAll := h.mustOK(t, "get_event_subscription", map[string]any{"subscription_id": allID})
		if !strings.Contains(gotAll.Text, "streams: ") || !strings.Contains(gotAll.Text, "transcripts (") {
			t.Errorf("get of an unfiltered subscription does not fall back to the grant's streams:\n%s", gotAll.Text)
		}
	})
}

// TestSchemaFullNextStep: after schema {"stream":…,"detail":"full"} the
// text names the stream's connections and its next step is a data read
// (which runs), not the same schema call again.
func TestSchemaFullNextStep(t *testing.T) {
	all := loadSamples(t)
	single, _ := sampleSets(all)
	replay := newHarness(t, newReplayRS(t, all, single, "schema-view-compact"), "sample-client-token")
	demo := newDemoHarness(t, tokClient)
	for _, tc := range []struct {
		name string
		h    *harness
		conn string
	}{{"replayed reference answer", replay, sampleConn}, {"demo RS", demo, connMain}} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.h.mustOK(t, "schema", map[string]any{"stream": "transcripts", "detail": "full"})
			if !strings.Contains(r.Text, tc.conn) {
				t.Errorf("full schema text omits the connection %s:\n%s", tc.conn, r.Text)
			}
			next, ok := callAfter(r.Text, "next: ")
			if !ok || next.Tool == "schema" {
				t.Fatalf("next step repeats schema or is missing:\n%s", r.Text)
			}
			if next.Tool != "query_records" || next.Args["stream"] != "transcripts" || next.Args["connection_id"] != tc.conn {
				t.Errorf("next step %+v, want query_records of transcripts in %s", next, tc.conn)
			}
			if tc.h == demo {
				tc.h.mustOK(t, next.Tool, next.Args)
			}
		})
	}
}

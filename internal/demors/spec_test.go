package demors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/spec"
)

// TestResponsesMatchSpec validates demo responses against spec/pdpp-rs.openapi.yaml: every
// shape-case request plus the operations the samples do not cover.
func TestResponsesMatchSpec(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec.OpenAPI)
	if err != nil {
		t.Fatalf("load spec: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "shape_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []shapeCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	type call struct {
		method, path, grant string
		body                any
	}
	var calls []call
	for _, c := range cases {
		calls = append(calls, call{http.MethodGet, c.Path, c.Grant, nil})
	}
	r := newRS(t)
	rv := newReceiver(t, true)
	created := r.do(t, http.MethodPost, "/v1/event-subscriptions", demors.GrantClient, map[string]any{"callback_url": rv.srv.URL}).mustStatus(t, 201).body
	sub := "/v1/event-subscriptions/" + str(created["subscription_id"])
	blob := str(at(r.get(t, "/v1/streams/notes/records/note-3", demors.GrantClient).mustStatus(t, 200).body, "data", "attachment", "blob_id"))
	calls = append(calls,
		call{http.MethodGet, "/v1/schema", demors.GrantClient, nil},
		call{http.MethodGet, "/v1/schema?view=compact", demors.GrantNarrow, nil},
		call{http.MethodGet, "/v1/schema?view=compact", demors.GrantOwner, nil},
		call{http.MethodGet, "/v1/streams/notes?connection_id=cin_demo_notes", demors.GrantClient, nil},
		call{http.MethodGet, "/v1/streams/transcripts/records?limit=2&expand=video&connection_id=cin_demo_loom_main", demors.GrantClient, nil},
		call{http.MethodGet, "/v1/streams/notes/records?changes_since=beginning&count=exact", demors.GrantClient, nil},
		call{http.MethodGet, "/v1/streams/videos/records?filter[bogus]=x", demors.GrantClient, nil},
		call{http.MethodGet, "/v1/streams/transcripts/records/tr-5?connection_id=cin_demo_loom_main&expand=video", demors.GrantClient, nil},
		call{http.MethodGet, "/v1/streams/videos/aggregate?metric=max&field=duration_seconds", demors.GrantClient, nil},
		call{http.MethodGet, "/v1/search?q=zephyrmarker&streams=notes", demors.GrantClient, nil},
		call{http.MethodGet, "/v1/search?q=zephyrmarker&limit=2", demors.GrantNarrow, nil},
		call{http.MethodGet, "/v1/search/hybrid?q=zephyrmarker%20checklist", demors.GrantClient, nil},
		call{http.MethodGet, "/v1/blobs/" + blob, demors.GrantClient, nil},
		call{http.MethodGet, "/v1/blobs/blob_nope", demors.GrantClient, nil},
		call{http.MethodGet, "/v1/event-subscriptions", demors.GrantClient, nil},
		call{http.MethodGet, sub, demors.GrantClient, nil},
		call{http.MethodPatch, sub, demors.GrantClient, map[string]any{"rotate_secret": true}},
		call{http.MethodPost, sub + "/test-event", demors.GrantClient, nil},
		call{http.MethodPost, "/v1/event-subscriptions", demors.GrantOwner, map[string]any{"callback_url": rv.srv.URL}},
		call{http.MethodPost, "/v1/event-subscriptions", demors.GrantClient, map[string]any{"callback_url": "http://example.com/"}},
		call{http.MethodDelete, sub, demors.GrantClient, nil},
		call{http.MethodGet, sub, demors.GrantClient, nil},
	)
	for _, c := range calls {
		t.Run(c.method+" "+c.path+" as "+c.grant, func(t *testing.T) {
			resp := r.do(t, c.method, c.path, c.grant, c.body)
			var reqBody io.Reader
			if c.body != nil {
				reqBody = bytes.NewReader(mustJSON(t, c.body))
			}
			req, err := http.NewRequest(c.method, "http://rs.invalid"+c.path, reqBody)
			if err != nil {
				t.Fatal(err)
			}
			route, params, err := router.FindRoute(req)
			if err != nil {
				t.Fatalf("no spec route: %v", err)
			}
			if route.Operation.Responses.Status(resp.status) == nil {
				t.Errorf("%s answered %d, which the spec does not declare", route.Operation.OperationID, resp.status)
			}
			header := resp.header
			if route.Operation.OperationID == "getBlob" && resp.status == 200 {
				// Blob bytes carry their real media type. A spec that declares only
				// application/octet-stream cannot name them all; validate the rest of the
				// response as octet-stream and say so.
				if rr := route.Operation.Responses.Status(200); rr != nil && rr.Value.Content.Get(header.Get("Content-Type")) == nil {
					t.Logf("spec declares no media type matching %q for getBlob; validating as application/octet-stream", header.Get("Content-Type"))
					header = header.Clone()
					header.Set("Content-Type", "application/octet-stream")
				}
			}
			err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
				RequestValidationInput: &openapi3filter.RequestValidationInput{
					Request: req, PathParams: params, Route: route,
					Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
				},
				Status:  resp.status,
				Header:  header,
				Body:    io.NopCloser(bytes.NewReader(resp.raw)),
				Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
			})
			if err != nil {
				t.Errorf("%s %d does not match the spec: %v\n%s", route.Operation.OperationID, resp.status, err, truncate(resp.raw))
			}
		})
	}
}

func truncate(b []byte) string {
	s := string(b)
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return strings.TrimSpace(s)
}

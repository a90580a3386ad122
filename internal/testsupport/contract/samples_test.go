package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// samplesDir holds the captured reference-RS responses (testdata/ at the module root).
var samplesDir = testkit.SamplesDir()

// indexEntry is one row of _index.json.
type indexEntry struct {
	Request string            `json:"request"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Note    string            `json:"note"`
}

// requestsOutsideSpec are samples whose request the spec deliberately refuses: the RS
// answered them (with an error, or by clamping), but a conforming client never sends them.
var requestsOutsideSpec = map[string]string{
	"error-aggregate-bad-metric":             "metric=median is outside the metric enum",
	"error-field-window-missing-field-param": "field is required",
	"error-limit-over-max-clamped":           "limit=500 is above maximum 100 (the RS clamps and warns)",
}

func loadIndex(t *testing.T) map[string]indexEntry {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(samplesDir, "_index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx map[string]indexEntry
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatalf("parse _index.json: %v", err)
	}
	if len(idx) == 0 {
		t.Fatal("_index.json lists no samples")
	}
	return idx
}

func newRouter(t *testing.T, doc *openapi3.T) routers.Router {
	t.Helper()
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	return r
}

// sampleRequest turns an _index.json request line ("GET /v1/search?q=x") into a request.
func sampleRequest(t *testing.T, line string) *http.Request {
	t.Helper()
	method, target, ok := strings.Cut(line, " ")
	if !ok {
		t.Fatalf("malformed request line %q", line)
	}
	req, err := http.NewRequest(method, "http://rs.invalid"+target, nil)
	if err != nil {
		t.Fatalf("request line %q: %v", line, err)
	}
	req.Header.Set("Authorization", "Bearer sample")
	return req
}

// TestSamplesMatchSpec routes every captured RS exchange through the spec and validates
// the response body against the schema declared for its status, and the request against
// the declared parameters.
func TestSamplesMatchSpec(t *testing.T) {
	idx := loadIndex(t)
	doc := loadSpec(t)
	router := newRouter(t, doc)
	names := make([]string, 0, len(idx))
	for name := range idx {
		names = append(names, name)
	}
	sort.Strings(names)
	seenOutside := map[string]bool{}

	for _, name := range names {
		entry := idx[name]
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join(samplesDir, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			req := sampleRequest(t, entry.Request)
			route, pathParams, err := router.FindRoute(req)
			if err != nil {
				t.Fatalf("no route for %q: %v", entry.Request, err)
			}
			if route.Operation.Responses.Status(entry.Status) == nil {
				t.Errorf("%s does not declare status %d (only default would match)", route.Operation.OperationID, entry.Status)
			}
			reqInput := &openapi3filter.RequestValidationInput{
				Request:    req,
				PathParams: pathParams,
				Route:      route,
				Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
			}

			t.Run("response", func(t *testing.T) {
				header := http.Header{}
				for k, v := range entry.Headers {
					header.Set(k, v)
				}
				if header.Get("Content-Type") == "" {
					t.Fatal("_index.json has no content-type for this sample")
				}
				err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
					RequestValidationInput: reqInput,
					Status:                 entry.Status,
					Header:                 header,
					Body:                   io.NopCloser(bytes.NewReader(body)),
					Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
				})
				if err != nil {
					t.Errorf("%s %d: %v", route.Operation.OperationID, entry.Status, err)
				}
			})

			t.Run("request", func(t *testing.T) {
				err := openapi3filter.ValidateRequest(context.Background(), reqInput)
				if reason, outside := requestsOutsideSpec[name]; outside {
					seenOutside[name] = true
					if err == nil {
						t.Errorf("request %q passed validation, but the spec should refuse it: %s", entry.Request, reason)
					}
					return
				}
				if err != nil {
					t.Errorf("request %q does not fit the declared parameters: %v", entry.Request, err)
				}
			})
		})
	}
	for name := range requestsOutsideSpec {
		if !seenOutside[name] {
			t.Errorf("requestsOutsideSpec lists %q, which is not in _index.json", name)
		}
	}
}

// TestResponseSchemasRejectWrongShapes makes sure the sample check above can fail: bodies
// that break a declared type or miss a required field are refused.
func TestResponseSchemasRejectWrongShapes(t *testing.T) {
	doc := loadSpec(t)
	router := newRouter(t, doc)
	cases := []struct {
		name, request string
		status        int
		body          string
	}{
		{"list without data", "GET /v1/streams/transcripts/records", 200, `{"object":"list","has_more":false}`},
		{"record id not a string", "GET /v1/streams/transcripts/records/tr-5", 200, `{"object":"record","id":5,"stream":"transcripts"}`},
		{"window offsets not integers", "GET /v1/streams/transcripts/records/tr-5/field-window?field=text", 200,
			`{"object":"field_window","field":{"path":"text"},"record_id":"tr-5","stream":"transcripts","window":{"text":"x","start_chars":"0","end_chars":1,"total_chars":1,"complete":true,"has_more":false}}`},
		{"error envelope without code", "GET /v1/streams", 401, `{"error":{"message":"no"}}`},
		{"search hit with wrong object", "GET /v1/search?q=x", 200, `{"object":"list","has_more":false,"data":[{"object":"record","record_key":"a","stream":"s"}]}`},
		{"aggregation with unknown metric", "GET /v1/streams/videos/aggregate?metric=count", 200, `{"object":"aggregation","stream":"videos","metric":"median"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := sampleRequest(t, tc.request)
			route, pathParams, err := router.FindRoute(req)
			if err != nil {
				t.Fatal(err)
			}
			err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
				RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route},
				Status:                 tc.status,
				Header:                 http.Header{"Content-Type": {"application/json"}},
				Body:                   io.NopCloser(strings.NewReader(tc.body)),
			})
			if err == nil {
				t.Errorf("body %s validated, want a schema error", tc.body)
			}
		})
	}
}

// TestRequestValidationRejectsBadParams shows the declared parameters are enforced by
// kin-openapi, including inside deepObject maps, so the request half of the sample check
// can fail too.
func TestRequestValidationRejectsBadParams(t *testing.T) {
	doc := loadSpec(t)
	router := newRouter(t, doc)
	cases := []struct {
		request string
		valid   bool
	}{
		{"GET /v1/streams/t/records?expand_limit[video]=3&expand=video", true},
		{"GET /v1/streams/t/records?expand_limit[video]=abc", false},
		{"GET /v1/streams/t/records?expand_limit[video]=0", false},
		{"GET /v1/streams/t/records?filter[created_at][gte]=2026-01-01T00:00:00Z&filter[language]=en", true},
		{"GET /v1/streams/t/records?limit=0", false},
		{"GET /v1/streams/t/records?limit=100&order=asc", true},
		{"GET /v1/streams/t/records?order=up", false},
		{"GET /v1/streams/t/records/r/field-window?field=text&limit_chars=16384", true},
		{"GET /v1/streams/t/records/r/field-window?field=text&limit_chars=16385", false},
		{"GET /v1/streams/t/aggregate?metric=count&granularity=fortnight", false},
		{"GET /v1/search?q=x&streams=a&streams=b&limit=100", true},
		{"GET /v1/search?streams=a", false},
		{"GET /v1/search/hybrid?q=x&limit=101", false},
	}
	for _, tc := range cases {
		t.Run(tc.request, func(t *testing.T) {
			req := sampleRequest(t, tc.request)
			route, pathParams, err := router.FindRoute(req)
			if err != nil {
				t.Fatal(err)
			}
			err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
				Request: req, PathParams: pathParams, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
			})
			if tc.valid && err != nil {
				t.Errorf("want valid, got %v", err)
			}
			if !tc.valid && err == nil {
				t.Error("want a validation error, got none")
			}
		})
	}
}

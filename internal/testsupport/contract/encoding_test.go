package contract

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/gen/rsserver"
)

// requestLog records the raw requests a test RS receives.
type requestLog struct {
	mu   sync.Mutex
	urls []*url.URL
}

func (l *requestLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.urls = append(l.urls, r.URL)
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"error":{"type":"not_found_error","code":"not_found","message":"Record not found","request_id":"req_test"}}`))
}

func (l *requestLog) last(t *testing.T) *url.URL {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.urls) == 0 {
		t.Fatal("the RS received no request")
	}
	return l.urls[len(l.urls)-1]
}

func ptr[T any](v T) *T { return &v }

// TestClientEncodesQuery pins how the generated client puts typed parameters on the wire:
// deepObject maps as filter[field]=v / filter[field][op]=v / expand_limit[rel]=N with
// literal brackets, arrays as repeated keys, escaped path segments, and the base path kept.
func TestClientEncodesQuery(t *testing.T) {
	log := &requestLog{}
	srv := httptest.NewServer(log)
	defer srv.Close()
	// No trailing slash on purpose: NewClient adds it, which keeps the /rs base path.
	c, err := rsclient.NewClientWithResponses(srv.URL + "/rs")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	cases := []struct {
		name      string
		call      func() (int, error)
		wantPath  string
		wantQuery url.Values
		wantRaw   []string // substrings of the raw query, to pin the literal form
	}{
		{
			name: "listRecords filter, expand, expand_limit",
			call: func() (int, error) {
				r, err := c.ListRecordsWithResponse(ctx, "videos", &rsclient.ListRecordsParams{
					Limit:  ptr(2),
					Fields: ptr("id,title,created_at"),
					Filter: &rsclient.Filter{
						"created_at": map[string]any{"gte": "2026-02-01T00:00:00Z", "lt": "2026-02-10T00:00:00Z"},
						"language":   "it",
						"duration":   120,
					},
					Expand:      &[]string{"video", "owner"},
					ExpandLimit: &rsclient.ExpandLimit{"video": 3},
				})
				return status(r, err)
			},
			wantPath: "/rs/v1/streams/videos/records",
			wantQuery: url.Values{
				"limit":                   {"2"},
				"fields":                  {"id,title,created_at"},
				"filter[created_at][gte]": {"2026-02-01T00:00:00Z"},
				"filter[created_at][lt]":  {"2026-02-10T00:00:00Z"},
				"filter[language]":        {"it"},
				"filter[duration]":        {"120"},
				"expand":                  {"video", "owner"},
				"expand_limit[video]":     {"3"},
			},
			wantRaw: []string{"filter[created_at][gte]=2026-02-01T00%3A00%3A00Z", "expand_limit[video]=3", "expand=video&expand=owner"},
		},
		{
			name: "filter keys and values with reserved characters",
			call: func() (int, error) {
				r, err := c.AggregateStreamWithResponse(ctx, "notes", &rsclient.AggregateStreamParams{
					Metric: rsclient.AggregateStreamParamsMetricCount,
					Filter: &rsclient.Filter{"a b&c": "x=y[z]"},
				})
				return status(r, err)
			},
			wantPath:  "/rs/v1/streams/notes/aggregate",
			wantQuery: url.Values{"metric": {"count"}, "filter[a b&c]": {"x=y[z]"}},
		},
		{
			name: "search streams array",
			call: func() (int, error) {
				r, err := c.SearchRecordsLexicalWithResponse(ctx, &rsclient.SearchRecordsLexicalParams{
					Q:       "needle5 zephyrmarker",
					Streams: &[]string{"transcripts", "videos"},
					Limit:   ptr(5),
				})
				return status(r, err)
			},
			wantPath:  "/rs/v1/search",
			wantQuery: url.Values{"q": {"needle5 zephyrmarker"}, "streams": {"transcripts", "videos"}, "limit": {"5"}},
			wantRaw:   []string{"streams=transcripts&streams=videos"},
		},
		{
			name: "field-window escapes the record id",
			call: func() (int, error) {
				r, err := c.GetFieldWindowWithResponse(ctx, "transcripts", "a/b c", &rsclient.GetFieldWindowParams{
					Field: "text", Q: ptr("needle5"), BeforeChars: ptr(80), AfterChars: ptr(120),
				})
				return status(r, err)
			},
			wantPath:  "/rs/v1/streams/transcripts/records/a%2Fb%20c/field-window",
			wantQuery: url.Values{"field": {"text"}, "q": {"needle5"}, "before_chars": {"80"}, "after_chars": {"120"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, err := tc.call()
			if err != nil {
				t.Fatal(err)
			}
			if code != http.StatusNotFound {
				t.Errorf("status = %d, want the 404 the test RS sends", code)
			}
			got := log.last(t)
			if p := got.EscapedPath(); p != tc.wantPath {
				t.Errorf("path = %s, want %s", p, tc.wantPath)
			}
			if q := got.Query(); !reflect.DeepEqual(q, tc.wantQuery) {
				t.Errorf("query = %v\nwant    %v\nraw: %s", q, tc.wantQuery, got.RawQuery)
			}
			for _, s := range tc.wantRaw {
				if !strings.Contains(got.RawQuery, s) {
					t.Errorf("raw query %q does not contain %q", got.RawQuery, s)
				}
			}
		})
	}

	t.Run("error envelope is parsed", func(t *testing.T) {
		r, err := c.GetRecordWithResponse(ctx, "transcripts", "does-not-exist", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON404 == nil || r.JSON404.Error.Code != "not_found" {
			t.Errorf("JSON404 = %+v, want the not_found envelope (body %s)", r.JSON404, r.Body)
		}
	})
}

// status returns the HTTP status of a generated *WithResponse result.
func status(r interface{ StatusCode() int }, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return r.StatusCode(), nil
}

// bindRecorder implements the strict server operations this test calls and records the
// request objects the generated wrapper bound. Calling any other operation panics.
type bindRecorder struct {
	rsserver.StrictServerInterface
	mu      sync.Mutex
	records []rsserver.ListRecordsRequestObject
	search  []rsserver.SearchRecordsLexicalRequestObject
}

func (b *bindRecorder) ListRecords(_ context.Context, req rsserver.ListRecordsRequestObject) (rsserver.ListRecordsResponseObject, error) {
	b.mu.Lock()
	b.records = append(b.records, req)
	b.mu.Unlock()
	return rsserver.ListRecords200JSONResponse{
		Object:  rsserver.RecordListObjectList,
		HasMore: false,
		Data:    []rsserver.Record{{Object: rsserver.RecordObjectRecord, Id: "tr-5", Stream: req.Stream}},
	}, nil
}

func (b *bindRecorder) SearchRecordsLexical(_ context.Context, req rsserver.SearchRecordsLexicalRequestObject) (rsserver.SearchRecordsLexicalResponseObject, error) {
	b.mu.Lock()
	b.search = append(b.search, req)
	b.mu.Unlock()
	return rsserver.SearchRecordsLexical200JSONResponse{Object: rsserver.SearchResultListObjectList, Data: []rsserver.SearchResult{}}, nil
}

func (b *bindRecorder) GetFieldWindow(context.Context, rsserver.GetFieldWindowRequestObject) (rsserver.GetFieldWindowResponseObject, error) {
	return rsserver.GetFieldWindowdefaultJSONResponse{StatusCode: http.StatusTeapot}, nil
}

func (b *bindRecorder) lastRecords(t *testing.T) rsserver.ListRecordsRequestObject {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.records) == 0 {
		t.Fatal("ListRecords was not called")
	}
	return b.records[len(b.records)-1]
}

func (b *bindRecorder) lastSearch(t *testing.T) rsserver.SearchRecordsLexicalRequestObject {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.search) == 0 {
		t.Fatal("SearchRecordsLexical was not called")
	}
	return b.search[len(b.search)-1]
}

// bindErrors collects the binding errors the std-http wrapper reports.
type bindErrors struct {
	mu   sync.Mutex
	errs []error
}

func (e *bindErrors) handle(w http.ResponseWriter, _ *http.Request, err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadRequest)
}

func (e *bindErrors) last() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) == 0 {
		return nil
	}
	return e.errs[len(e.errs)-1]
}

func newBindServer(t *testing.T) (*httptest.Server, *bindRecorder, *bindErrors) {
	t.Helper()
	rec := &bindRecorder{}
	errs := &bindErrors{}
	h := rsserver.HandlerWithOptions(rsserver.NewStrictHandler(rec, nil), rsserver.StdHTTPServerOptions{ErrorHandlerFunc: errs.handle})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, rec, errs
}

// TestStrictServerBindsQuery sends real RS query strings to the generated std-http strict
// server and checks what the handler receives. Leaf values of the free-form filter map are
// bound as JSON scalars: numeric text becomes float64, true/false become bool.
func TestStrictServerBindsQuery(t *testing.T) {
	srv, rec, _ := newBindServer(t)
	cases := []struct {
		name        string
		target      string
		filter      rsserver.Filter
		expandLimit rsserver.ExpandLimit
		expand      []string
		limit       *int
	}{
		{
			name:   "sample range filter",
			target: "/v1/streams/videos/records?limit=2&fields=id,title,created_at&filter[created_at][gte]=2026-02-01T00:00:00Z&filter[created_at][lt]=2026-02-10T00:00:00Z",
			filter: rsserver.Filter{"created_at": map[string]any{"gte": "2026-02-01T00:00:00Z", "lt": "2026-02-10T00:00:00Z"}},
			limit:  ptr(2),
		},
		{
			name:   "exact filter, percent-encoded brackets",
			target: "/v1/streams/transcripts/records?filter%5Blanguage%5D=it",
			filter: rsserver.Filter{"language": "it"},
		},
		{
			name:   "numeric and boolean leaves",
			target: "/v1/streams/videos/records?filter[duration_seconds][gte]=60&filter[archived]=false&filter[code]=00714",
			filter: rsserver.Filter{"duration_seconds": map[string]any{"gte": float64(60)}, "archived": false, "code": "00714"},
		},
		{
			name:        "expand and expand_limit",
			target:      "/v1/streams/transcripts/records?expand=video&expand_limit[video]=3",
			expand:      []string{"video"},
			expandLimit: rsserver.ExpandLimit{"video": 3},
		},
		{
			name:   "limit above the maximum is bound unchanged (the server must clamp)",
			target: "/v1/streams/transcripts/records?limit=500",
			limit:  ptr(500),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if status := getStatus(t, srv.URL+tc.target); status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
			got := rec.lastRecords(t).Params
			if !reflect.DeepEqual(deref(got.Filter), tc.filter) {
				t.Errorf("Filter = %#v, want %#v", deref(got.Filter), tc.filter)
			}
			if !reflect.DeepEqual(deref(got.ExpandLimit), tc.expandLimit) {
				t.Errorf("ExpandLimit = %#v, want %#v", deref(got.ExpandLimit), tc.expandLimit)
			}
			if !reflect.DeepEqual(deref(got.Expand), tc.expand) {
				t.Errorf("Expand = %#v, want %#v", deref(got.Expand), tc.expand)
			}
			if !reflect.DeepEqual(got.Limit, tc.limit) {
				t.Errorf("Limit = %v, want %v", deref(got.Limit), deref(tc.limit))
			}
		})
	}

	searchCases := []struct {
		name, target string
		streams      []string
	}{
		{"repeated streams", "/v1/search?q=needle5&streams=transcripts&streams=videos", []string{"transcripts", "videos"}},
		{"single stream", "/v1/search?q=needle7&streams=transcripts&filter[language]=en&limit=3", []string{"transcripts"}},
		{"bracket form streams[] is not bound", "/v1/search?q=x&streams[]=transcripts", nil},
	}
	for _, tc := range searchCases {
		t.Run(tc.name, func(t *testing.T) {
			if status := getStatus(t, srv.URL+tc.target); status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
			if got := deref(rec.lastSearch(t).Params.Streams); !reflect.DeepEqual(got, tc.streams) {
				t.Errorf("Streams = %#v, want %#v", got, tc.streams)
			}
		})
	}
}

// TestStrictServerBindErrors shows which typed errors the std-http wrapper hands to
// StdHTTPServerOptions.ErrorHandlerFunc, so a server can answer in the RS error envelope.
func TestStrictServerBindErrors(t *testing.T) {
	srv, _, errs := newBindServer(t)
	cases := []struct {
		name, target, param string
		required            bool
	}{
		{"non-integer expand_limit", "/v1/streams/transcripts/records?expand_limit[video]=many", "expand_limit", false},
		{"non-integer limit", "/v1/streams/transcripts/records?limit=ten", "limit", false},
		{"missing field", "/v1/streams/transcripts/records/tr-5/field-window?connection_id=cin_1", "field", true},
		{"missing q", "/v1/search?streams=transcripts", "q", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if status := getStatus(t, srv.URL+tc.target); status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400 from the error handler", status)
			}
			err := errs.last()
			var req *rsserver.RequiredParamError
			var format *rsserver.InvalidParamFormatError
			switch {
			case tc.required && errors.As(err, &req):
				if req.ParamName != tc.param {
					t.Errorf("RequiredParamError.ParamName = %q, want %q", req.ParamName, tc.param)
				}
			case !tc.required && errors.As(err, &format):
				if format.ParamName != tc.param {
					t.Errorf("InvalidParamFormatError.ParamName = %q, want %q", format.ParamName, tc.param)
				}
			default:
				t.Errorf("error %T %v, want a typed error for %s", err, err, tc.param)
			}
		})
	}
}

// TestClientServerRoundTrip sends typed parameters through the generated client to the
// generated strict server and checks they arrive unchanged.
func TestClientServerRoundTrip(t *testing.T) {
	srv, rec, _ := newBindServer(t)
	c, err := rsclient.NewClientWithResponses(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	filter := rsclient.Filter{
		"created_at": map[string]any{"gte": "2026-02-01T00:00:00Z", "lte": "2026-03-01T00:00:00Z"},
		"language":   "en",
	}
	r, err := c.ListRecordsWithResponse(context.Background(), "transcripts", &rsclient.ListRecordsParams{
		Filter:       &filter,
		ExpandLimit:  &rsclient.ExpandLimit{"video": 2},
		Expand:       &[]string{"video"},
		ConnectionId: ptr("cin_3325c9636dab3a5344743485"),
		Order:        ptr(rsclient.ListRecordsParamsOrderAsc),
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.JSON200 == nil || len(r.JSON200.Data) != 1 || r.JSON200.Data[0].Id != "tr-5" {
		t.Fatalf("JSON200 = %+v (status %d, body %s)", r.JSON200, r.StatusCode(), r.Body)
	}
	got := rec.lastRecords(t)
	if got.Stream != "transcripts" {
		t.Errorf("Stream = %q", got.Stream)
	}
	if !reflect.DeepEqual(map[string]any(deref(got.Params.Filter)), map[string]any(filter)) {
		t.Errorf("Filter = %#v, want %#v", deref(got.Params.Filter), filter)
	}
	if !reflect.DeepEqual(deref(got.Params.ExpandLimit), rsserver.ExpandLimit{"video": 2}) {
		t.Errorf("ExpandLimit = %#v", deref(got.Params.ExpandLimit))
	}
	if deref(got.Params.ConnectionId) != "cin_3325c9636dab3a5344743485" || deref(got.Params.Order) != rsserver.ListRecordsParamsOrderAsc {
		t.Errorf("ConnectionId = %q, Order = %q", deref(got.Params.ConnectionId), deref(got.Params.Order))
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestRequestBuildersNeedTrailingSlash documents DESIGN §6: NewClient appends the missing
// slash itself, but the exported New*Request builders resolve the operation path against
// the server URL as given, so a base path without a trailing slash is dropped.
func TestRequestBuildersNeedTrailingSlash(t *testing.T) {
	cases := []struct {
		server, wantPath string
	}{
		{"http://rs.invalid/rs/", "/rs/v1/streams/transcripts/records/tr-5"},
		{"http://rs.invalid/rs", "/v1/streams/transcripts/records/tr-5"},
		{"http://rs.invalid", "/v1/streams/transcripts/records/tr-5"},
	}
	for _, tc := range cases {
		t.Run(tc.server, func(t *testing.T) {
			req, err := rsclient.NewGetRecordRequest(tc.server, "transcripts", "tr-5", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := req.URL.EscapedPath(); got != tc.wantPath {
				t.Errorf("path = %s, want %s", got, tc.wantPath)
			}
		})
	}
}

// getStatus makes a GET of url and returns the answer's status, the body
// left unread.
func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

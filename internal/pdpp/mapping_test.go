package pdpp_test

import (
	"net/url"
	"testing"
)

// TestMappedArgumentsReachRS calls the read tools through an MCP client
// with every argument the catalog maps to an RS parameter (param:, not
// by_hand) and checks the demo RS received each one as that parameter: the
// handlers build their requests with the generated <Operation>Call, so no
// argument is copied, or dropped, by hand.
func TestMappedArgumentsReachRS(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	tests := []struct {
		name, tool string
		args       map[string]any
		path       string
		want       url.Values
	}{
		{"query_records", "query_records", map[string]any{
			"stream": "videos", "limit": 2, "order": "desc", "sort": "created_at", "count": "exact",
			"view": "summary", "changes_since": "beginning", "connection_id": connMain,
		}, "/v1/streams/videos/records", url.Values{
			"limit": {"2"}, "order": {"desc"}, "sort": {"created_at"}, "count": {"exact"},
			"view": {"summary"}, "changes_since": {"beginning"}, "connection_id": {connMain},
		}},
		{"aggregate", "aggregate", map[string]any{
			"stream": "videos", "metric": "count", "group_by_time": "created_at", "granularity": "month",
			"time_zone": "Europe/Paris", "limit": 3, "connection_id": connMain,
		}, "/v1/streams/videos/aggregate", url.Values{
			"metric": {"count"}, "group_by_time": {"created_at"}, "granularity": {"month"},
			"time_zone": {"Europe/Paris"}, "limit": {"3"}, "connection_id": {connMain},
		}},
		{"search, each mode", "search", map[string]any{
			"q": "hello", "streams": []string{"videos", "notes"}, "limit": 4, "connection_id": connMain, "mode": "semantic",
		}, "/v1/search/semantic", url.Values{
			"q": {"hello"}, "streams": {"videos", "notes"}, "limit": {"4"}, "connection_id": {connMain},
		}},
		{"search, hybrid", "search", map[string]any{
			"q": "hello", "streams": []string{"videos"}, "limit": 5, "mode": "hybrid",
		}, "/v1/search/hybrid", url.Values{"q": {"hello"}, "streams": {"videos"}, "limit": {"5"}}},
		{"schema", "schema", map[string]any{"stream": "videos", "connection_id": connMain},
			"/v1/schema", url.Values{"stream": {"videos"}, "connection_id": {connMain}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.log.reset()
			h.call(t, tc.tool, tc.args) // the RS may refuse a value; the request is what counts
			ex, ok := h.log.last(func(path string) bool { return path == tc.path })
			if !ok {
				t.Fatalf("no request to %s; the RS saw %v", tc.path, h.log.requests())
			}
			got, err := url.ParseQuery(ex.Query)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				if g := got[name]; len(g) != len(want) || (len(g) > 0 && g[0] != want[0]) || (len(g) > 1 && g[1] != want[1]) {
					t.Errorf("parameter %s = %q, want %q (request %s)", name, g, want, ex.Line)
				}
			}
		})
	}
}

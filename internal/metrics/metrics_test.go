package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestLabel(t *testing.T) {
	tests := []struct{ in, want string }{
		{"search", "search"},
		{"/v1/streams/{stream}/records/{id}", "/v1/streams/{stream}/records/{id}"},
		{"context.stream_not_allowed", "context.stream_not_allowed"},
		{"", ""},
		{"two words", "other"},
		{"tok=abc", "other"},
		{"caf\u00e9", "other"},
		{strings.Repeat("a", 65), "other"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := Label(tc.in); got != tc.want {
				t.Errorf("Label(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestNilAndPrivate checks that a nil *Metrics records nothing without
// panicking and that two instances do not share series.
func TestNilAndPrivate(t *testing.T) {
	var off *Metrics
	off.HTTPRequest("/mcp", 200)
	off.ToolStarted("search")("ok", "")
	off.Batch(2)
	off.RSRequest("GET", "/v1/search", "200", time.Millisecond)
	off.AuthRefused("missing_token")

	a, b := New(), New()
	a.AuthRefused("missing_token")
	scrape := func(m *Metrics) string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		return string(body)
	}
	if !strings.Contains(scrape(a), `mcp_auth_refusals_total{reason="missing_token"} 1`) {
		t.Error("the refusal is missing from its own registry")
	}
	if strings.Contains(scrape(b), `mcp_auth_refusals_total{reason="missing_token"}`) {
		t.Error("a second instance sees the first one's series")
	}
}

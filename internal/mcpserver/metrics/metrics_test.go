package metrics

import (
	"fmt"
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
	off.Shed("server_busy")
	off.BodyReadTimeout()

	a, b := New(), New()
	a.Shed("server_busy")
	a.BodyReadTimeout()
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
	if !strings.Contains(scrape(a), `mcp_http_requests_shed_total{reason="server_busy"} 1`) {
		t.Error("the shed request is missing from its own registry")
	}
	if !strings.Contains(scrape(a), "mcp_http_body_read_timeouts_total 1") || !strings.Contains(scrape(b), "mcp_http_body_read_timeouts_total 0") {
		t.Error("the body read timeout is not counted in its own registry only")
	}
	if strings.Contains(scrape(b), `mcp_auth_refusals_total{reason="missing_token"}`) {
		t.Error("a second instance sees the first one's series")
	}
}

// TestErrorCodeValuesAreBounded records tool errors with more distinct codes
// than maxErrorCodes, as an RS inventing codes would: the first ones keep their
// series, later new ones count as "other", a code already seen keeps its own,
// and calls without a code keep the empty value.
func TestErrorCodeValuesAreBounded(t *testing.T) {
	m := New()
	for i := range maxErrorCodes + 50 {
		m.ToolStarted("search")("tool_error", fmt.Sprintf("rs_code_%d", i))
	}
	m.ToolStarted("search")("tool_error", "rs_code_0")
	m.ToolStarted("search")("ok", "")

	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]float64{}
	for _, f := range families {
		if f.GetName() != NameToolCalls {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "error_code" {
					codes[l.GetValue()] += s.GetCounter().GetValue()
				}
			}
		}
	}
	if len(codes) != maxErrorCodes+2 {
		t.Errorf("%d error_code values, want %d (the first %d codes, other and none)", len(codes), maxErrorCodes+2, maxErrorCodes)
	}
	if codes["other"] != 50 {
		t.Errorf("other = %v, want 50", codes["other"])
	}
	if codes["rs_code_0"] != 2 {
		t.Errorf("rs_code_0 = %v, want 2", codes["rs_code_0"])
	}
	if codes[""] != 1 {
		t.Errorf("calls without a code = %v, want 1", codes[""])
	}
	if _, ok := codes[fmt.Sprintf("rs_code_%d", maxErrorCodes)]; ok {
		t.Error("a code past the bound has its own series")
	}
}

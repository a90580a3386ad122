package cli

import (
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// TestMetricsEndpoint drives the paper server behind its static bearer check,
// asks its admin listener's probes and scrapes its metrics.
func TestMetricsEndpoint(t *testing.T) {
	url, metricsAddr := startHTTPMetrics(t, httpFlags{bearerToken: "s3cret-token", HTTPFlags: cmdkit.HTTPFlags{AdminListen: "127.0.0.1:0"}})
	if metricsAddr == "" {
		t.Fatal("no admin listener")
	}
	// The admin listener serves the probes too, as the PDPP server's does.
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp, body := do(t, http.MethodGet, "http://"+metricsAddr+path, "", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("admin %s: %d %s", path, resp.StatusCode, body)
		}
	}
	auth := map[string]string{"Authorization": "Bearer s3cret-token"}
	const query = "vision transformer"
	resp, body := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_papers","arguments":{"query":"`+query+`"}}}`, auth)
	if resp.StatusCode != http.StatusOK || strings.Contains(body, `"isError":true`) {
		t.Fatalf("search_papers: %d %s", resp.StatusCode, body)
	}
	if id := resp.Header.Get("X-Request-Id"); len(id) != 32 {
		t.Errorf("X-Request-Id = %q, want a generated id", id)
	}
	if resp, _ := do(t, http.MethodPost, url, toolsListBody, map[string]string{"Authorization": "Bearer wrong"}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", resp.StatusCode)
	}
	if resp, _ := do(t, http.MethodPost, url, toolsListBody, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}

	tests := []struct {
		name   string
		labels map[string]string
	}{
		{metrics.NameToolCalls, map[string]string{"tool": "search_papers", "outcome": "ok"}},
		{metrics.NameToolDuration, map[string]string{"tool": "search_papers"}},
		{metrics.NameHTTPRequests, map[string]string{"route": "/mcp", "status": "401"}},
		{metrics.NameAuthRefusals, map[string]string{"reason": "missing_token"}},
		{metrics.NameAuthRefusals, map[string]string{"reason": "invalid_token"}},
		{metrics.NameBudgetHeld, nil},
		{"go_goroutines", nil},
		{"process_cpu_seconds_total", nil},
	}
	// The transport counts a request after its reply is written, so the
	// last refusal may not be counted yet when the client has its answer:
	// scrape until every series is there (bounded by testkit.Patience).
	var fams map[string]*dto.MetricFamily
	testkit.Eventually(testkit.Patience, func() bool {
		fams = testkit.Scrape(t, "http://"+metricsAddr+"/metrics")
		for _, tc := range tests {
			if _, ok := testkit.Sample(fams, tc.name, tc.labels); !ok {
				return false
			}
		}
		return true
	})
	for _, tc := range tests {
		if _, ok := testkit.Sample(fams, tc.name, tc.labels); !ok {
			t.Errorf("no series %s%v", tc.name, tc.labels)
		}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v := l.GetValue(); strings.Contains(v, "vision") || strings.Contains(v, "s3cret") || strings.Contains(v, "wrong") {
					t.Errorf("%s label %s=%q carries request data", name, l.GetName(), v)
				}
			}
		}
	}
}

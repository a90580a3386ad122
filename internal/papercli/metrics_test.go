package papercli

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pdpp-mcp/pdpp-mcp/internal/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/metrics"
)

// TestMetricsEndpoint drives the paper server behind its static bearer check
// and scrapes its metrics listener.
func TestMetricsEndpoint(t *testing.T) {
	metricsAddr := freeAddr(t)
	url := startHTTP(t, httpFlags{bearerToken: "s3cret-token", HTTPFlags: cmdkit.HTTPFlags{MetricsListen: metricsAddr}})
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

	mresp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(mresp.Body)
	if err != nil {
		t.Fatal(err)
	}
	has := func(name string, want map[string]string) bool {
	next:
		for _, m := range fams[name].GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
				if strings.Contains(l.GetValue(), "vision") || strings.Contains(l.GetValue(), "s3cret") || strings.Contains(l.GetValue(), "wrong") {
					t.Errorf("%s label %s=%q carries request data", name, l.GetName(), l.GetValue())
				}
			}
			for k, v := range want {
				if got[k] != v {
					continue next
				}
			}
			return true
		}
		return false
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
		{"go_goroutines", nil},
		{"process_cpu_seconds_total", nil},
	}
	for _, tc := range tests {
		if !has(tc.name, tc.labels) {
			t.Errorf("no series %s%v", tc.name, tc.labels)
		}
	}
}

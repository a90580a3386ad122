package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	dto "github.com/prometheus/client_model/go"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// rsSeen is one request as the RS received it.
type rsSeen struct {
	path, auth, requestID, traceparent, tracestate string
}

// recordingRS is the demo RS behind a recorder of correlation headers.
func recordingRS(t *testing.T) (string, func() []rsSeen) {
	t.Helper()
	s, err := demors.New(demors.Config{Tokens: fixedTokens})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []rsSeen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, rsSeen{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Request-Id"), r.Header.Get("Traceparent"), r.Header.Get("Tracestate")})
		mu.Unlock()
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); s.Close() })
	return srv.URL, func() []rsSeen {
		mu.Lock()
		defer mu.Unlock()
		return append([]rsSeen(nil), seen...)
	}
}

// startObservedHTTP serves the PDPP server with metrics on and returns the
// /mcp URL and the /metrics URL.
func startObservedHTTP(t *testing.T, provider string, log *slog.Logger) (string, string) {
	t.Helper()
	h := httpFlags{
		common:    common{providerURL: provider, serverName: "pdpp", toolsets: "read", rsTimeout: 10 * time.Second},
		HTTPFlags: cmdkit.HTTPFlags{HTTPConfig: transport.HTTPConfig{Listen: "127.0.0.1:0", MaxBodyBytes: 1 << 20}, MetricsListen: "127.0.0.1:0"},
	}
	addr, metricsAddr := serveForTest(t, context.Background(), log, &h)
	if metricsAddr == nil {
		t.Fatal("no metrics listener")
	}
	return "http://" + addr.String() + "/mcp", "http://" + metricsAddr.String() + "/metrics"
}

// postRPC sends one raw JSON-RPC POST and returns the reply.
func postRPC(t *testing.T, url, body string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	return testkit.Do(t, http.MethodPost, url, body, headers)
}

func TestHTTPMetricsAndCorrelation(t *testing.T) {
	const (
		traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		tracestate  = "vendor=opaque"
		callID      = "client-report-7"
	)
	provider, rsRequests := recordingRS(t)
	logs := &testkit.Buffer{}
	mcpURL, metricsURL := startObservedHTTP(t, provider, slog.New(slog.NewTextHandler(logs, nil)))

	// A real client session carrying a trace context and a request id.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.NewStreamableHttpClient(mcpURL, mcptransport.WithHTTPHeaders(map[string]string{
		"Authorization": "Bearer " + fixedTokens["client"],
		"Traceparent":   traceparent, "Tracestate": tracestate, "X-Request-Id": callID,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := startSession(ctx, c, mcp.LATEST_PROTOCOL_VERSION, "metrics-test"); err != nil {
		t.Fatal(err)
	}
	search := callTool(t, ctx, c, "search", map[string]any{"q": "zephyrmarker", "limit": 3})
	var hits struct {
		Results []struct{ ID string } `json:"results"`
	}
	if err := remarshal(search.StructuredContent, &hits); err != nil || search.IsError || len(hits.Results) == 0 {
		t.Fatalf("search found nothing: %s", textOf(search))
	}
	recordID := hits.Results[0].ID
	if res := callTool(t, ctx, c, "fetch", map[string]any{"id": recordID}); res.IsError {
		t.Fatalf("fetch: %s", textOf(res))
	}
	if res := callTool(t, ctx, c, "query_records", map[string]any{"stream": "transcripts", "cursor": "garbage"}); !res.IsError {
		t.Fatalf("a garbage cursor was accepted: %s", textOf(res))
	}

	// Every RS request of the session carries the call's id and trace context.
	var sessionRS int
	for _, r := range rsRequests() {
		if r.auth == "" {
			continue // readiness and metadata probes belong to no call
		}
		if r.requestID == "" {
			t.Errorf("RS request %s carries no X-Request-Id", r.path)
		}
		if r.requestID == callID {
			sessionRS++
			if r.traceparent != traceparent || r.tracestate != tracestate {
				t.Errorf("RS request %s: trace context %q %q, want %q %q", r.path, r.traceparent, r.tracestate, traceparent, tracestate)
			}
		}
	}
	if sessionRS < 3 {
		t.Errorf("%d RS requests carried the session's request id, want at least 3", sessionRS)
	}

	// An adapter error names the generated request id, which the reply
	// header and the access log show too.
	resp, body := postRPC(t, mcpURL, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"query_records","arguments":{"stream":"transcripts","limit":-4}}}`,
		map[string]string{"Authorization": "Bearer " + fixedTokens["client"], "MCP-Protocol-Version": "2025-11-25"})
	generated := resp.Header.Get("X-Request-Id")
	var rpc struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Error struct {
					Type      string `json:"type"`
					Code      string `json:"code"`
					RequestID string `json:"request_id"`
				} `json:"error"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &rpc); err != nil || !rpc.Result.IsError {
		t.Fatalf("want an error result, got %s %s", resp.Status, body)
	}
	e := rpc.Result.StructuredContent.Error
	if len(generated) != 32 || e.Type != "adapter_error" || e.RequestID != generated {
		t.Errorf("adapter error %+v, X-Request-Id %q: want the generated id in both", e, generated)
	}
	// The access line is written after the reply: wait for it (bounded by
	// testkit.Patience).
	hasIDs := func() bool {
		out := logs.String()
		return strings.Contains(out, "request_id="+generated) && strings.Contains(out, "request_id="+callID)
	}
	if !testkit.Eventually(testkit.Patience, hasIDs) {
		t.Errorf("the access log lacks the request ids %q and %q:\n%s", generated, callID, logs.String())
	}

	// A refused request and a 2025-03-26 batch.
	if resp, _ := postRPC(t, mcpURL, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no bearer: %s", resp.Status)
	}
	if resp, _ := postRPC(t, mcpURL, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		map[string]string{"Authorization": "Bearer " + fixedTokens["owner"], "MCP-Protocol-Version": "2025-11-25"}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("owner token: %s", resp.Status)
	}
	if resp, body := postRPC(t, mcpURL, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		map[string]string{"Authorization": "Bearer " + fixedTokens["client"], "MCP-Protocol-Version": "2025-03-26"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("batch: %s %s", resp.Status, body)
	}

	wantSeries := []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{metrics.NameToolCalls, map[string]string{"tool": "search", "outcome": "ok", "error_code": ""}, 1},
		{metrics.NameToolCalls, map[string]string{"tool": "fetch", "outcome": "ok"}, 1},
		{metrics.NameToolCalls, map[string]string{"tool": "query_records", "outcome": "tool_error", "error_code": "invalid_cursor"}, 1},
		{metrics.NameToolCalls, map[string]string{"tool": "query_records", "outcome": "tool_error", "error_code": e.Code}, 1},
		{metrics.NameToolDuration, map[string]string{"tool": "search", "outcome": "ok"}, 1},
		{metrics.NameHTTPRequests, map[string]string{"route": "/mcp", "status": "200"}, 5},
		{metrics.NameHTTPRequests, map[string]string{"route": "/mcp", "status": "401"}, 1},
		{metrics.NameAuthRefusals, map[string]string{"reason": "missing_token"}, 1},
		{metrics.NameAuthRefusals, map[string]string{"reason": "owner_token_refused"}, 1},
		{metrics.NameRSRequests, map[string]string{"method": "GET", "route": "/v1/streams/{stream}/records/{id}", "status": "200"}, 1},
		{metrics.NameRSRequests, map[string]string{"method": "GET", "status": "400"}, 1},
		{metrics.NameRSDuration, map[string]string{"method": "GET"}, 3},
		{metrics.NameBatchSize, nil, 1},
	}
	// The transport records a request's metrics after its reply is written,
	// so the last ones may land just after the client has read the reply:
	// scrape until every wanted series is there (bounded by
	// testkit.Patience).
	var fams map[string]*dto.MetricFamily
	testkit.Eventually(testkit.Patience, func() bool {
		fams = testkit.Scrape(t, metricsURL)
		for _, tc := range wantSeries {
			if got, ok := testkit.Sample(fams, tc.name, tc.labels); !ok || got < tc.min {
				return false
			}
		}
		return true
	})
	t.Run("names", func(t *testing.T) {
		for _, name := range []string{metrics.NameHTTPRequests, metrics.NameToolCalls, metrics.NameToolDuration, metrics.NameToolsInFlight,
			metrics.NameBatchSize, metrics.NameRSRequests, metrics.NameRSDuration, metrics.NameAuthRefusals,
			"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
			if fams[name] == nil {
				t.Errorf("metric %s is missing", name)
			}
		}
	})
	t.Run("series", func(t *testing.T) {
		for _, tc := range wantSeries {
			got, ok := testkit.Sample(fams, tc.name, tc.labels)
			if !ok || got < tc.min {
				t.Errorf("%s%v = %v (found %v), want at least %v", tc.name, tc.labels, got, ok, tc.min)
			}
		}
		if got, _ := testkit.Sample(fams, metrics.NameToolsInFlight, nil); got != 0 {
			t.Errorf("%d calls still in flight", int(got))
		}
		if h := fams[metrics.NameBatchSize].GetMetric()[0].GetHistogram(); h.GetSampleSum() != 2 {
			t.Errorf("batch size sum = %v, want 2", h.GetSampleSum())
		}
	})
	t.Run("no private data in labels", func(t *testing.T) {
		forbidden := []string{"zephyrmarker", fixedTokens["client"], callID, generated, "4bf92f3577b34da6a3ce929d0e0e4736", "garbage", recordID}
		if _, rest, ok := strings.Cut(recordID, ":"); ok {
			forbidden = append(forbidden, rest)
		}
		for name, f := range fams {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					v := l.GetValue()
					for _, bad := range forbidden {
						if bad != "" && strings.Contains(v, bad) {
							t.Errorf("%s{%s=%q} carries %q", name, l.GetName(), v, bad)
						}
					}
					if l.GetName() == "route" && v != "other" && !strings.HasPrefix(v, "/") {
						t.Errorf("%s route label %q is not a template", name, v)
					}
				}
			}
		}
	})
}

// TestHostileTraceContextIsReencoded sends trace contexts a client could
// forge to the hosted server and checks what every RS request of the call
// (the token check included) carries: only a version-00 traceparent rebuilt
// from the parsed fields, and a tracestate only when it is valid.
func TestHostileTraceContextIsReencoded(t *testing.T) {
	const (
		trace  = "4bf92f3577b34da6a3ce929d0e0e4736"
		parent = "00f067aa0ba902b7"
		v00    = "00-" + trace + "-" + parent + "-01"
	)
	provider, rsRequests := recordingRS(t)
	mcpURL, _ := startObservedHTTP(t, provider, slog.New(slog.NewTextHandler(&testkit.Buffer{}, nil)))
	tests := []struct {
		name                  string
		traceparent           string
		tracestate            string
		wantParent, wantState string
	}{
		{"future version with a script tail", "01-" + trace + "-" + parent + `-01-<script>"x`, "vendor=1", v00, "vendor=1"},
		{"future version with unknown flags", "7f-" + trace + "-" + parent + "-ff-0000", "", "00-" + trace + "-" + parent + "-03", ""},
		{"version 00 with a tail", v00 + "-x", "vendor=1", "", ""},
		{"valid traceparent, tracestate over 512 bytes", v00, "a=" + strings.Repeat("b", 600), v00, ""},
		{"valid traceparent, tracestate with an invalid member", v00, "good=1,BAD KEY=2", v00, ""},
		{"valid traceparent, tracestate with a quote", v00, `ok=1,v="x`, v00, `ok=1,v="x`},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			callID := fmt.Sprintf("trace-case-%d", i)
			headers := map[string]string{
				"Authorization": "Bearer " + fixedTokens["client"], "MCP-Protocol-Version": "2025-11-25",
				"X-Request-Id": callID, "Traceparent": tc.traceparent,
			}
			if tc.tracestate != "" {
				headers["Tracestate"] = tc.tracestate
			}
			resp, body := postRPC(t, mcpURL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"zephyrmarker","limit":1}}}`, headers)
			if resp.StatusCode != http.StatusOK || strings.Contains(string(body), `"isError":true`) {
				t.Fatalf("search: %s %s", resp.Status, body)
			}
			seen := 0
			for _, r := range rsRequests() {
				if r.requestID != callID {
					continue
				}
				seen++
				if r.traceparent != tc.wantParent || r.tracestate != tc.wantState {
					t.Errorf("RS request %s: trace context %q %q, want %q %q", r.path, r.traceparent, r.tracestate, tc.wantParent, tc.wantState)
				}
			}
			if seen == 0 {
				t.Fatal("no RS request carried the call's request id")
			}
		})
	}
}

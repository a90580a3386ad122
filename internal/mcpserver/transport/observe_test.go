package transport

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// TestObserveBatchSize: the batch-size histogram counts each 2025-03-26
// batch the dispatcher parsed, refused over the cap or not, and nothing for
// single messages or for batches sent under a revision without batches.
func TestObserveBatchSize(t *testing.T) {
	list := rpc(1, "tools/list", nil)
	tests := []struct {
		name       string
		version    string
		body       string
		wantStatus int
		wantCount  uint64
		wantSum    float64
	}{
		{"batch of two", "2025-03-26", "[" + list + "," + rpc(2, "ping", nil) + "]", http.StatusOK, 1, 2},
		{"batch over the cap", "2025-03-26", batchOf(5, "rs_read", nil), http.StatusBadRequest, 1, 5},
		{"empty batch", "2025-03-26", "[]", http.StatusBadRequest, 1, 0},
		{"batch under 2025-06-18", "2025-06-18", "[" + list + "]", http.StatusBadRequest, 0, 0},
		{"single message", "2025-03-26", list, http.StatusOK, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New()
			h, err := NewHTTPHandler(newTestServer(testTools{}), HTTPConfig{MaxBatchItems: 4, Metrics: m, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", tc.version)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req) // Observe records before ServeHTTP returns
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body)
			}
			fams, err := m.Registry().Gather()
			if err != nil {
				t.Fatal(err)
			}
			var count uint64
			var sum float64
			for _, f := range fams {
				if f.GetName() == metrics.NameBatchSize {
					hist := f.GetMetric()[0].GetHistogram()
					count, sum = hist.GetSampleCount(), hist.GetSampleSum()
				}
			}
			if count != tc.wantCount || sum != tc.wantSum {
				t.Fatalf("batch size histogram: %d samples summing to %v, want %d summing to %v", count, sum, tc.wantCount, tc.wantSum)
			}
		})
	}
}

// TestObserveAroundOuterStage: a program's own stage wrapped around the
// handler by Observe (as the paper server's static bearer check is) has the
// requests it answers itself logged and counted, and a request it passes on
// is logged and counted once, with one request id.
func TestObserveAroundOuterStage(t *testing.T) {
	var logs testkit.Buffer
	m := metrics.New()
	cfg := HTTPConfig{Metrics: m, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	inner, err := NewHTTPHandler(newTestServer(testTools{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	refuseUnlessKey := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Key") != "k" {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(Observe(cfg, refuseUnlessKey(inner)))
	t.Cleanup(srv.Close)

	tests := []struct {
		name   string
		header http.Header
		want   int
	}{
		{"refused by the outer stage", nil, http.StatusUnauthorized},
		{"passed on", hdr("X-Key", "k"), http.StatusOK},
	}
	for _, tc := range tests {
		resp, body := post(t, srv.URL+"/mcp", http.MethodPost, rpc(1, "tools/list", nil), tc.header)
		if resp.StatusCode != tc.want || len(resp.Header.Values("X-Request-Id")) != 1 {
			t.Fatalf("%s: status %d, request ids %q: %s", tc.name, resp.StatusCode, resp.Header.Values("X-Request-Id"), body)
		}
	}
	// Observe logs and counts after the reply is written: wait for both
	// lines (bounded by testkit.Patience). The counter is incremented after
	// the line is written, so wait for the second count too (below).
	out := logs.WaitCount(`"msg":"http request"`, len(tests), testkit.Patience)
	var statuses []float64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["msg"] == "http request" {
			statuses = append(statuses, rec["status"].(float64))
		}
	}
	// Each line is written after its reply, and the second request may come
	// on a new connection before the first line is out: compare as a set.
	slices.Sort(statuses)
	if !slices.Equal(statuses, []float64{200, 401}) {
		t.Fatalf("access log statuses %v, want 200 and 401:\n%s", statuses, logs.String())
	}
	// countedByStatus reads the HTTP request counter by status label.
	countedByStatus := func() map[string]float64 {
		fams, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		counted := map[string]float64{}
		for _, f := range fams {
			if f.GetName() != metrics.NameHTTPRequests {
				continue
			}
			for _, s := range f.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "status" {
						counted[l.GetValue()] += s.GetCounter().GetValue()
					}
				}
			}
		}
		return counted
	}
	var counted map[string]float64
	testkit.Eventually(testkit.Patience, func() bool {
		counted = countedByStatus()
		return counted["401"]+counted["200"] >= 2
	})
	if counted["401"] != 1 || counted["200"] != 1 || len(counted) != 2 {
		t.Fatalf("HTTP requests counted by status: %v, want one 401 and one 200", counted)
	}
}

package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/metrics"
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

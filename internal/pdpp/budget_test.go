package pdpp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// Hold times of the slow RS: the token check (GET /v1/schema) and every
// other request. Either fits overBudget alone, both together do not, and
// the data request reaches the RS with 500 ms of overBudget to spare (room
// for a loaded, race-enabled run).
const (
	schemaHold = 100 * time.Millisecond
	dataHold   = 550 * time.Millisecond
	overBudget = 600 * time.Millisecond
)

// slowRSClient serves a fresh PDPP server with call budget budget over an RS
// that holds each request (schemaHold for the token check, dataHold for the
// others), through an in-process MCP client. calls counts the RS requests.
func slowRSClient(t *testing.T, budget time.Duration) (*client.Client, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	answer := faultyRS(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[],"has_more":false}`))
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		hold := dataHold
		if r.URL.Path == "/v1/schema" {
			hold = schemaHold
		}
		select {
		case <-time.After(hold):
		case <-r.Context().Done():
			return
		}
		answer.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	token := func(context.Context) (string, error) { return "tok", nil }
	// The client's own per-request bound is long: only the budget can cut a call.
	rsClient, err := rs.New(srv.URL, token, rs.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := pdpp.NewServer(pdpp.New(pdpp.Config{RS: rsClient, Token: token}), pdpp.ServerOptions{CallTimeout: budget})
	c, _ := startInProcess(t, s, "pdpp-budget-test")
	return c, &calls
}

// TestCallBudgetSpansRSRequests: --rs-timeout is the budget of one whole
// call. Against an RS that holds the token check 100ms and the data request
// 550ms, a call that needs both fits a 10s budget but not a 600ms one,
// although each request alone would fit; the latter is a typed rs_timeout,
// for tool calls and resource reads alike.
func TestCallBudgetSpansRSRequests(t *testing.T) {
	tests := []struct {
		name    string
		budget  time.Duration
		wantErr bool
	}{
		{"two requests within the budget", 10 * time.Second, false},
		{"two requests over the budget", overBudget, true},
	}
	for _, tc := range tests {
		t.Run(tc.name+": tool call", func(t *testing.T) {
			c, calls := slowRSClient(t, tc.budget)
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = "query_records", map[string]any{"stream": "notes"}
			res, err := c.CallTool(context.Background(), req)
			if err != nil {
				t.Fatalf("protocol error %v", err)
			}
			text := res.Content[0].(mcp.TextContent).Text
			if res.IsError != tc.wantErr {
				t.Fatalf("isError %v, want %v:\n%s", res.IsError, tc.wantErr, text)
			}
			if tc.wantErr && !strings.Contains(text, "error rs_timeout") {
				t.Fatalf("want a typed rs_timeout, got:\n%s", text)
			}
			if calls.Load() != 2 {
				t.Fatalf("the call made %d RS requests, want 2 (token check, data)", calls.Load())
			}
		})
		t.Run(tc.name+": resource read", func(t *testing.T) {
			c, _ := slowRSClient(t, tc.budget)
			rr := mcp.ReadResourceRequest{}
			rr.Params.URI = "pdpp://stream/notes"
			_, err := c.ReadResource(context.Background(), rr)
			if tc.wantErr != (err != nil) || (err != nil && !strings.Contains(err.Error(), "rs_timeout")) {
				t.Fatalf("resource read: %v, want error %v (rs_timeout)", err, tc.wantErr)
			}
		})
	}
}

package pdpp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/tokencheck"
)

// faultyRS answers the token check normally and every data request with the
// given fault.
func faultyRS(fault http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/schema" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"schema","bearer":{"token_kind":"client"},"connectors":[]}`))
			return
		}
		fault(w, r)
	})
}

// TestRSFaultsBecomeToolErrors injects the failures a real RS or network can
// produce and checks each reaches the model as a typed, actionable isError
// result through an MCP client — never a protocol error or a hang.
func TestRSFaultsBecomeToolErrors(t *testing.T) {
	faults := []struct {
		name  string
		fault http.HandlerFunc
		code  string
	}{
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
			}
		}, "rs_timeout"},
		{"5xx without envelope", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>bad gateway</html>"))
		}, "rs_http_502"},
		{"5xx with envelope", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"type":"api_error","code":"overloaded","message":"try later"}}`))
		}, "overloaded"},
		{"malformed JSON", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":`))
		}, "rs_bad_response"},
		{"oversized body", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"object":"list","data":[],"pad":"` + strings.Repeat("x", 128<<10) + `"}`))
		}, "rs_response_too_large"},
		{"dropped connection", func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}, "rs_unreachable"},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			srv := httptest.NewServer(faultyRS(f.fault))
			defer srv.Close()
			token := func(context.Context) (string, error) { return "tok", nil }
			// Only the slow fault needs a short budget; the others get room
			// to fail the way they are meant to on a loaded machine.
			budget := 5 * time.Second
			if f.code == "rs_timeout" {
				budget = 300 * time.Millisecond
			}
			rsClient, err := rs.New(srv.URL, token, rs.Options{Timeout: budget, MaxBodySize: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			// The token check reads the schema through a client of its own,
			// so the slow case's short budget bounds only the data request
			// (a token check slowed past it by a loaded machine would answer
			// token_check_unavailable instead of the fault's code).
			checkClient, err := rs.New(srv.URL, token, rs.Options{Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			checker := tokencheck.New(checkClient, token, tokencheck.Options{Timeout: 10 * time.Second})
			c, _ := startInProcess(t, pdpp.NewServer(pdpp.New(pdpp.Config{RS: rsClient, Token: token, Checker: checker}), pdpp.ServerOptions{}), "pdpp-faults-test")
			ctx := context.Background()
			for _, call := range readCalls {
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = call.tool, call.args
				res, err := c.CallTool(ctx, req)
				if err != nil {
					t.Fatalf("%s: protocol error %v", call.tool, err)
				}
				text := res.Content[0].(mcp.TextContent).Text
				if !res.IsError || !strings.Contains(text, "error "+f.code) {
					t.Fatalf("%s: want isError with code %s, got:\n%s", call.tool, f.code, text)
				}
				sc, _ := res.StructuredContent.(map[string]any)
				if sc == nil || sc["error"] == nil {
					t.Fatalf("%s: structuredContent.error missing: %+v", call.tool, res.StructuredContent)
				}
			}
		})
	}
}

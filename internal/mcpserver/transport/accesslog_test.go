package transport

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// TestAccessLogBoundsRequestLine: a long path or method grows the access
// log by a bounded line that says how long the field was.
func TestAccessLogBoundsRequestLine(t *testing.T) {
	tests := []struct {
		name, method, path, want string
	}{
		{"60 KB path", http.MethodGet, "/" + strings.Repeat("p", 60_000), "(60001 bytes)"},
		{"60 KB path of multi-byte characters", http.MethodGet, "/" + strings.Repeat("%C3%A9", 30_000), "(60001 bytes)"},
		{"long method", strings.Repeat("M", 50_000), "/mcp", "(50000 bytes)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.Buffer
			srv := newStack(t, HTTPConfig{Logger: slogTo(&logs)}, testTools{})
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			out := logs.WaitCount("http request", 1, testkit.Patience)
			if len(out) > 1024 {
				t.Fatalf("one request grew the log by %d bytes", len(out))
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("the cut field does not say its length %s:\n%s", tc.want, out)
			}
		})
	}
}

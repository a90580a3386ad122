package reqid

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzFromRequest: whatever a client sends as correlation headers, the kept
// values are safe to log and to forward as headers: a sane id, a valid
// traceparent or none, and a bounded printable tracestate only with one.
func FuzzFromRequest(f *testing.F) {
	f.Add("abc-123", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "congo=t61rcWkgMzE")
	f.Add("a b\r\n", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "x\x00")
	f.Add(strings.Repeat("x", 200), "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	f.Add("", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "a=b")
	f.Fuzz(func(t *testing.T, id, traceparent, tracestate string) {
		r := httptest.NewRequest("POST", "http://localhost/mcp", nil)
		r.Header["X-Request-Id"] = []string{id}
		r.Header["Traceparent"] = []string{traceparent}
		r.Header["Tracestate"] = []string{tracestate}
		info := FromRequest(r)
		if !SaneID(info.ID) {
			t.Fatalf("id %q is not sane", info.ID)
		}
		if info.TraceParent != "" && !ValidTraceParent(info.TraceParent) {
			t.Fatalf("traceparent %q kept although invalid", info.TraceParent)
		}
		if info.TraceParent == "" && info.TraceState != "" {
			t.Fatalf("tracestate %q kept without a traceparent", info.TraceState)
		}
		if len(info.TraceState) > maxTraceStateLen || !printableASCII(info.TraceState) {
			t.Fatalf("tracestate %q is not bounded printable ASCII", info.TraceState)
		}
	})
}

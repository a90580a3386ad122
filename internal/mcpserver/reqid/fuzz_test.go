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
		if _, valid := ParseTraceParent(info.TraceParent); info.TraceParent != "" && (!valid || len(info.TraceParent) != 55 || info.TraceParent[:3] != "00-") {
			t.Fatalf("traceparent %q kept, not a valid version-00 one", info.TraceParent)
		}
		if info.TraceParent != "" && !strings.Contains(traceparent, info.TraceParent[3:35]) {
			t.Fatalf("traceparent %q does not carry the trace id of %q", info.TraceParent, traceparent)
		}
		if info.TraceParent == "" && info.TraceState != "" {
			t.Fatalf("tracestate %q kept without a traceparent", info.TraceState)
		}
		if _, ok := cleanTraceState([]string{info.TraceState}); !ok || len(info.TraceState) > maxTraceStateLen || !printableASCII(info.TraceState) {
			t.Fatalf("tracestate %q is not bounded printable ASCII", info.TraceState)
		}
	})
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

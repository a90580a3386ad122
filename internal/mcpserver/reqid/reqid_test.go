package reqid

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestFromRequest(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name                  string
		headers               map[string]string
		wantID                string // "" means generated
		wantParent, wantState string
	}{
		{"nothing", nil, "", "", ""},
		{"sane id kept", map[string]string{"X-Request-Id": "abc-123.x:y_z"}, "abc-123.x:y_z", "", ""},
		{"id with spaces replaced", map[string]string{"X-Request-Id": "a b"}, "", "", ""},
		{"id with newline replaced", map[string]string{"X-Request-Id": "a\nb"}, "", "", ""},
		{"too long id replaced", map[string]string{"X-Request-Id": strings.Repeat("a", 129)}, "", "", ""},
		{"trace context kept", map[string]string{"Traceparent": tp, "Tracestate": "vendor=1"}, "", tp, "vendor=1"},
		{"upper-case traceparent dropped", map[string]string{"Traceparent": strings.ToUpper(tp), "Tracestate": "v=1"}, "", "", ""},
		{"zero trace id dropped", map[string]string{"Traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, "", "", ""},
		{"version ff dropped", map[string]string{"Traceparent": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, "", "", ""},
		{"version 00 with extra field dropped", map[string]string{"Traceparent": tp + "-zz"}, "", "", ""},
		{"future version re-encoded as 00, tail dropped", map[string]string{"Traceparent": "01" + tp[2:] + "-abc"}, "", tp, ""},
		{"future version with a script tail re-encoded", map[string]string{"Traceparent": "01" + tp[2:] + "-<script>\"x"}, "", tp, ""},
		{"unknown flags cleared", map[string]string{"Traceparent": tp[:53] + "ff"}, "", tp[:53] + "03", ""},
		{"flags kept when known", map[string]string{"Traceparent": tp[:53] + "02"}, "", tp[:53] + "02", ""},
		{"oversized future traceparent dropped", map[string]string{"Traceparent": "01" + tp[2:] + "-" + strings.Repeat("ab-", 70)}, "", "", ""},
		{"future version with bad trace id dropped", map[string]string{"Traceparent": "01-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01-x"}, "", "", ""},
		{"tracestate re-encoded without blanks", map[string]string{"Traceparent": tp, "Tracestate": " congo=t61rcWkgMzE ,, rojo=00f067aa0ba902b7"}, "", tp, "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"},
		{"multi-tenant key kept", map[string]string{"Traceparent": tp, "Tracestate": "fw529a3039@dt=1,a*b/c_d-e=x y"}, "", tp, "fw529a3039@dt=1,a*b/c_d-e=x y"},
		{"upper-case key drops tracestate", map[string]string{"Traceparent": tp, "Tracestate": "Vendor=1"}, "", tp, ""},
		{"member without = drops tracestate", map[string]string{"Traceparent": tp, "Tracestate": "a=1,b"}, "", tp, ""},
		{"repeated key drops tracestate", map[string]string{"Traceparent": tp, "Tracestate": "a=1,a=2"}, "", tp, ""},
		{"value with = drops tracestate", map[string]string{"Traceparent": tp, "Tracestate": "a=1=2"}, "", tp, ""},
		{"value with a quote is allowed", map[string]string{"Traceparent": tp, "Tracestate": `a="x"`}, "", tp, `a="x"`},
		{"control character drops tracestate", map[string]string{"Traceparent": tp, "Tracestate": "a=1\x01"}, "", tp, ""},
		{"33 members drop tracestate", map[string]string{"Traceparent": tp, "Tracestate": members(33)}, "", tp, ""},
		{"32 members kept", map[string]string{"Traceparent": tp, "Tracestate": members(32)}, "", tp, members(32)},
		{"tracestate without traceparent dropped", map[string]string{"Tracestate": "v=1"}, "", "", ""},
		{"oversized tracestate dropped", map[string]string{"Traceparent": tp, "Tracestate": "v=" + strings.Repeat("v", 511)}, "", tp, ""},
		{"tracestate of exactly 512 bytes kept", map[string]string{"Traceparent": tp, "Tracestate": "a=" + strings.Repeat("v", 254) + ",b=" + strings.Repeat("w", 253)}, "", tp, "a=" + strings.Repeat("v", 254) + ",b=" + strings.Repeat("w", 253)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "http://x/mcp", nil)
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			info := FromRequest(r)
			if tc.wantID != "" && info.ID != tc.wantID {
				t.Errorf("id = %q, want %q", info.ID, tc.wantID)
			}
			if tc.wantID == "" && (len(info.ID) != 32 || info.ID == r.Header.Get("X-Request-Id")) {
				t.Errorf("id = %q, want a generated one", info.ID)
			}
			if info.TraceParent != tc.wantParent || info.TraceState != tc.wantState {
				t.Errorf("trace = %q %q, want %q %q", info.TraceParent, info.TraceState, tc.wantParent, tc.wantState)
			}

			out := http.Header{}
			Inject(With(context.Background(), info), out)
			if out.Get("X-Request-Id") != info.ID || out.Get("Traceparent") != tc.wantParent || out.Get("Tracestate") != tc.wantState {
				t.Errorf("injected %v", out)
			}
		})
	}
}

// members is a tracestate of n distinct valid members.
func members(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("k%d=v", i)
	}
	return strings.Join(parts, ",")
}

func TestTraceStateAcrossHeaders(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name       string
		parents    []string
		states     []string
		wantParent string
		wantState  string
	}{
		{"two tracestate headers joined", []string{tp}, []string{"a=1", "b=2"}, tp, "a=1,b=2"},
		{"same key in two headers dropped", []string{tp}, []string{"a=1", "a=2"}, tp, ""},
		{"two headers over 512 bytes together dropped", []string{tp}, []string{"a=" + strings.Repeat("v", 255), "b=" + strings.Repeat("w", 255)}, tp, ""},
		{"two traceparent headers drop trace context", []string{tp, tp}, []string{"a=1"}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "http://x/mcp", nil)
			r.Header["Traceparent"] = tc.parents
			r.Header["Tracestate"] = tc.states
			info := FromRequest(r)
			if info.TraceParent != tc.wantParent || info.TraceState != tc.wantState {
				t.Errorf("trace = %q %q, want %q %q", info.TraceParent, info.TraceState, tc.wantParent, tc.wantState)
			}
		})
	}
}

func TestInjectWithoutInfo(t *testing.T) {
	h := http.Header{}
	Inject(context.Background(), h)
	if len(h) != 0 {
		t.Fatalf("headers set without correlation data: %v", h)
	}
	if New() == New() {
		t.Fatal("two generated ids are equal")
	}
}

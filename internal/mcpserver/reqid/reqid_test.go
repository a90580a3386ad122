package reqid

import (
	"context"
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
		{"future version with extra field kept", map[string]string{"Traceparent": "01" + tp[2:] + "-abc"}, "", "01" + tp[2:] + "-abc", ""},
		{"oversized future traceparent dropped", map[string]string{"Traceparent": "01" + tp[2:] + "-" + strings.Repeat("ab-", 70)}, "", "", ""},
		{"tracestate without traceparent dropped", map[string]string{"Tracestate": "v=1"}, "", "", ""},
		{"oversized tracestate dropped", map[string]string{"Traceparent": tp, "Tracestate": strings.Repeat("v", 600)}, "", tp, ""},
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

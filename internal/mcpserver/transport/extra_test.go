package transport

import (
	"io"
	"net/http"
	"testing"
)

// TestExtraRoutes: extra routes are served behind the Host check, learn the
// public base from their context, need no bearer, and cannot take a route the
// transport serves itself.
func TestExtraRoutes(t *testing.T) {
	echoBase := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, PublicBaseURL(r.Context()))
	})
	for _, tc := range []struct {
		name, publicBase, host string
		status                 int
		body                   string // "" means the server's own URL
	}{
		{"base from Host", "", "", 200, ""},
		{"public base URL", "https://mcp.example.com/pdpp", "", 200, "https://mcp.example.com/pdpp"},
		{"Host not served", "", "evil.example", http.StatusMisdirectedRequest, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newStack(t, HTTPConfig{RequireBearer: true, PublicBaseURL: tc.publicBase,
				ExtraRoutes: map[string]http.Handler{"/extra": echoBase}}, testTools{})
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/extra", nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := tc.body
			if want == "" {
				want = srv.URL
			}
			if resp.StatusCode != tc.status || (tc.status == 200 && string(b) != want) {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, b, tc.status, want)
			}
		})
	}
	for _, own := range ownRoutes {
		if _, err := (HTTPConfig{ExtraRoutes: map[string]http.Handler{own: echoBase}}).Effective(); err == nil {
			t.Errorf("extra route %q accepted over the transport's own", own)
		}
	}
	if PublicBaseURL(t.Context()) != "" {
		t.Error("PublicBaseURL outside a served route must be empty")
	}
}

package papercli

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

// TestBearerRefusals pins every header and body member of the static
// bearer check's 401s, and that the configured token is compared as given:
// it need not be RFC 6750 b64token syntax, and white space around the
// token in the header is ignored.
func TestBearerRefusals(t *testing.T) {
	const token = "s3cret!token"
	url := startHTTP(t, httpFlags{bearerToken: token})
	tests := []struct {
		name      string
		auth      string
		want      int
		challenge string
		message   string
		reason    string
	}{
		{"missing", "", http.StatusUnauthorized, `Bearer realm="paper-mcp"`,
			"authorization required: send Authorization: Bearer <token>", "missing_token"},
		{"wrong token", "Bearer nope", http.StatusUnauthorized, `Bearer realm="paper-mcp", error="invalid_token"`,
			"the bearer token was not accepted: send the token this server was started with (--bearer-token)", "invalid_token"},
		{"other scheme", "Basic " + token, http.StatusUnauthorized, `Bearer realm="paper-mcp", error="invalid_request"`,
			"malformed Authorization header: send Authorization: Bearer <token>", "malformed_token"},
		{"no token after the scheme", "Bearer", http.StatusUnauthorized, `Bearer realm="paper-mcp", error="invalid_request"`,
			"malformed Authorization header: send Authorization: Bearer <token>", "malformed_token"},
		{"token outside b64token syntax", "Bearer " + token, http.StatusOK, "", "", ""},
		{"white space around the token", "Bearer  " + token + " ", http.StatusOK, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.auth != "" {
				h["Authorization"] = tc.auth
			}
			resp, body := do(t, http.MethodPost, url, toolsListBody, h)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want != http.StatusUnauthorized {
				return
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tc.challenge)
			}
			if got := resp.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("body is not JSON: %v: %s", err, body)
			}
			want := map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
				"code": float64(-32001), "message": tc.message, "data": map[string]any{"reason": tc.reason},
			}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("body = %s, want %v", body, want)
			}
		})
	}
}

package transport

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// Each test in this file covers one /mcp rule with raw net/http requests.

func TestMethodRule(t *testing.T) {
	plain := newStack(t, HTTPConfig{}, testTools{})
	withCORS := newStack(t, HTTPConfig{CORS: true, AllowedOrigins: []string{"https://app.example"}}, testTools{})
	tests := []struct {
		name       string
		srv        *httptest.Server
		method     string
		wantStatus int
		wantAllow  string
	}{
		{"GET", plain, http.MethodGet, http.StatusMethodNotAllowed, "POST"},
		{"HEAD", plain, http.MethodHead, http.StatusMethodNotAllowed, "POST"},
		{"DELETE", plain, http.MethodDelete, http.StatusMethodNotAllowed, "POST"},
		{"PUT", plain, http.MethodPut, http.StatusMethodNotAllowed, "POST"},
		{"PATCH", plain, http.MethodPatch, http.StatusMethodNotAllowed, "POST"},
		{"OPTIONS without CORS", plain, http.MethodOptions, http.StatusMethodNotAllowed, "POST"},
		{"GET with CORS", withCORS, http.MethodGet, http.StatusMethodNotAllowed, "POST, OPTIONS"},
		{"OPTIONS with CORS", withCORS, http.MethodOptions, http.StatusNoContent, "POST, OPTIONS"},
		{"POST", plain, http.MethodPost, http.StatusOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if tc.method == http.MethodPost {
				body = rpc(1, "ping", nil)
			}
			resp, b := post(t, tc.srv.URL+"/mcp", tc.method, body, nil)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, b)
			}
			if got := resp.Header.Get("Allow"); got != tc.wantAllow {
				t.Errorf("Allow %q, want %q", got, tc.wantAllow)
			}
			if tc.wantStatus == http.StatusMethodNotAllowed && tc.method != http.MethodHead {
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("405 Content-Type %q", ct)
				}
				if r := decodeReply(t, b); r.Error == nil || r.Error.Code != mcp.INVALID_REQUEST {
					t.Errorf("405 body %s", b)
				}
			}
		})
	}
}

func TestOriginRule(t *testing.T) {
	srv := newStack(t, HTTPConfig{AllowedOrigins: []string{"https://app.example", "http://localhost:5173"}}, testTools{})
	tests := []struct {
		name    string
		origins []string
		want    int
	}{
		{"absent", nil, http.StatusOK},
		{"listed", []string{"https://app.example"}, http.StatusOK},
		{"listed with explicit default port", []string{"https://app.example:443"}, http.StatusOK},
		{"listed host in upper case", []string{"https://APP.example"}, http.StatusOK},
		{"listed with port", []string{"http://localhost:5173"}, http.StatusOK},
		{"other port", []string{"http://localhost:5174"}, http.StatusForbidden},
		{"missing port", []string{"http://localhost"}, http.StatusForbidden},
		{"other scheme", []string{"http://app.example"}, http.StatusForbidden},
		{"subdomain", []string{"https://evil.app.example"}, http.StatusForbidden},
		{"suffix trick", []string{"https://app.example.evil"}, http.StatusForbidden},
		{"null origin", []string{"null"}, http.StatusForbidden},
		{"empty origin", []string{""}, http.StatusForbidden},
		{"two origins", []string{"https://app.example", "https://app.example"}, http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, o := range tc.origins {
				h.Add("Origin", o)
			}
			resp, b := post(t, srv.URL+"/mcp", http.MethodPost, rpc(1, "ping", nil), h)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			if tc.want == http.StatusForbidden {
				decodeReply(t, b)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("CORS header %q without CORS enabled", got)
			}
		})
	}

	t.Run("empty allowlist refuses a foreign origin", func(t *testing.T) {
		open := newStack(t, HTTPConfig{}, testTools{})
		resp, _ := post(t, open.URL+"/mcp", http.MethodPost, rpc(1, "ping", nil), hdr("Origin", "https://app.example"))
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d, want 403", resp.StatusCode)
		}
	})
}

func TestCORSRule(t *testing.T) {
	srv := newStack(t, HTTPConfig{CORS: true, AllowedOrigins: []string{"https://app.example"}}, testTools{})
	tests := []struct {
		name        string
		method      string
		origin      string
		reqHeaders  string
		wantStatus  int
		wantACAO    string
		wantHeaders string
	}{
		{"preflight allowed", http.MethodOptions, "https://app.example", "authorization, content-type, mcp-protocol-version, x-evil, mcp-param-region",
			http.StatusNoContent, "https://app.example", "authorization, content-type, mcp-protocol-version, mcp-param-region"},
		{"preflight refused", http.MethodOptions, "https://evil.example", "authorization", http.StatusForbidden, "", ""},
		{"simple allowed", http.MethodPost, "https://app.example", "", http.StatusOK, "https://app.example", ""},
		{"no origin", http.MethodPost, "", "", http.StatusOK, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.origin != "" {
				h.Set("Origin", tc.origin)
			}
			if tc.reqHeaders != "" {
				h.Set("Access-Control-Request-Method", "POST")
				h.Set("Access-Control-Request-Headers", tc.reqHeaders)
			}
			body := ""
			if tc.method == http.MethodPost {
				body = rpc(1, "ping", nil)
			}
			resp, b := post(t, srv.URL+"/mcp", tc.method, body, h)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, b)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.wantACAO {
				t.Errorf("Allow-Origin %q, want %q", got, tc.wantACAO)
			}
			if got := resp.Header.Get("Access-Control-Allow-Headers"); got != tc.wantHeaders {
				t.Errorf("Allow-Headers %q, want %q", got, tc.wantHeaders)
			}
			if tc.wantACAO != "" && !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
				t.Errorf("WWW-Authenticate not exposed: %q", resp.Header.Get("Access-Control-Expose-Headers"))
			}
		})
	}
}

// unsizedReader hides its length so the client sends a chunked body.
type unsizedReader struct{ r io.Reader }

func (u unsizedReader) Read(p []byte) (int, error) { return u.r.Read(p) }

func TestBodyLimitRule(t *testing.T) {
	const limit = 512
	srv := newStack(t, HTTPConfig{MaxBodyBytes: limit}, testTools{})
	// A valid echo call padded with spaces to an exact size.
	sized := func(n int) string {
		b := callBody(1, "echo", map[string]any{"text": "x"})
		return b + strings.Repeat(" ", n-len(b))
	}
	tests := []struct {
		name    string
		body    string
		chunked bool
		want    int
	}{
		{"at the limit", sized(limit), false, http.StatusOK},
		{"one byte over", sized(limit + 1), false, http.StatusRequestEntityTooLarge},
		{"far over", sized(64 << 10), false, http.StatusRequestEntityTooLarge},
		{"chunked at the limit", sized(limit), true, http.StatusOK},
		{"chunked over", sized(limit + 1), true, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rd io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				rd = unsizedReader{rd}
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", rd)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			r := decodeReply(t, b)
			if tc.want == http.StatusRequestEntityTooLarge && (r.Error == nil || !strings.Contains(string(r.Error.Data), "512")) {
				t.Errorf("413 body %s", b)
			}
			if tc.want == http.StatusOK && r.Error != nil {
				t.Errorf("call failed: %s", b)
			}
		})
	}
}

func TestProtocolVersionRule(t *testing.T) {
	srv := newStack(t, HTTPConfig{}, testTools{})
	modernDiscover := rpc(1, "server/discover", map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}})
	tests := []struct {
		name    string
		version string
		body    string
		extra   []string
		want    int
	}{
		{"absent on initialize", "", initializeBody(1, "2025-03-26"), nil, http.StatusOK},
		{"absent on tools/list", "", rpc(1, "tools/list", nil), nil, http.StatusOK},
		{"2025-03-26", "2025-03-26", rpc(1, "tools/list", nil), nil, http.StatusOK},
		{"2025-06-18", "2025-06-18", rpc(1, "tools/list", nil), nil, http.StatusOK},
		{"2025-11-25", "2025-11-25", rpc(1, "tools/list", nil), nil, http.StatusOK},
		{"2026-07-28", "2026-07-28", modernDiscover, []string{"Mcp-Method", "server/discover"}, http.StatusOK},
		{"2024-11-05 unsupported", "2024-11-05", rpc(1, "tools/list", nil), nil, http.StatusBadRequest},
		{"unknown", "1999-01-01", rpc(1, "tools/list", nil), nil, http.StatusBadRequest},
		{"garbage", "latest", rpc(1, "tools/list", nil), nil, http.StatusBadRequest},
		{"unsupported on initialize", "2024-11-05", initializeBody(1, "2024-11-05"), nil, http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := hdr(tc.extra...)
			if tc.version != "" {
				h.Set("MCP-Protocol-Version", tc.version)
			}
			resp, b := post(t, srv.URL+"/mcp", http.MethodPost, tc.body, h)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			r := decodeReply(t, b)
			if tc.want == http.StatusOK {
				if r.Error != nil {
					t.Fatalf("unexpected error: %s", b)
				}
				return
			}
			if r.Error == nil || r.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
				t.Fatalf("want an unsupported-version error, got %s", b)
			}
			if string(r.ID) != "1" {
				t.Errorf("id %s, want the request id", r.ID)
			}
			var data mcp.UnsupportedProtocolVersionData
			if err := json.Unmarshal(r.Error.Data, &data); err != nil || data.Requested != tc.version ||
				!slices.Equal(data.Supported, DefaultProtocolVersions()) {
				t.Errorf("error data %s", r.Error.Data)
			}
		})
	}

	t.Run("narrowed list", func(t *testing.T) {
		narrow := newStack(t, HTTPConfig{ProtocolVersions: []string{"2025-06-18"}}, testTools{})
		for v, want := range map[string]int{"2025-06-18": 200, "2025-11-25": 400, "": 400} {
			h := http.Header{}
			if v != "" {
				h.Set("MCP-Protocol-Version", v)
			}
			resp, b := post(t, narrow.URL+"/mcp", http.MethodPost, rpc(1, "tools/list", nil), h)
			if resp.StatusCode != want {
				t.Errorf("version %q: status %d, want %d: %s", v, resp.StatusCode, want, b)
			}
		}
	})
}

func TestInitializeNegotiatesConfiguredVersions(t *testing.T) {
	srv := newStack(t, HTTPConfig{ProtocolVersions: []string{"2025-06-18", "2025-03-26"}}, testTools{})
	tests := []struct{ requested, want string }{
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-06-18"},
		{"2024-11-05", "2025-06-18"},
		{"2026-07-28", "2025-06-18"},
		{"not-a-version", "2025-06-18"},
	}
	for _, tc := range tests {
		t.Run(tc.requested, func(t *testing.T) {
			resp, b := post(t, srv.URL+"/mcp", http.MethodPost, initializeBody(7, tc.requested), nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var res struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if err := json.Unmarshal(decodeReply(t, b).Result, &res); err != nil || res.ProtocolVersion != tc.want {
				t.Fatalf("negotiated %q, want %q (%s)", res.ProtocolVersion, tc.want, b)
			}
		})
	}
}

func TestBearerRule(t *testing.T) {
	srv := newStack(t, HTTPConfig{RequireBearer: true, AuthorizationServers: []string{"https://as.example"}}, testTools{})
	metadata := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	tests := []struct {
		name       string
		auth       []string
		wantStatus int
		wantErr    string // error= parameter of the challenge, "" for none
		wantToken  string
	}{
		{"missing", nil, http.StatusUnauthorized, "", ""},
		{"empty", []string{""}, http.StatusUnauthorized, "", ""},
		{"basic scheme", []string{"Basic dXNlcjpwYXNz"}, http.StatusUnauthorized, "invalid_request", ""},
		{"scheme only", []string{"Bearer"}, http.StatusUnauthorized, "invalid_request", ""},
		{"scheme and space", []string{"Bearer "}, http.StatusUnauthorized, "invalid_request", ""},
		{"two tokens", []string{"Bearer abc def"}, http.StatusUnauthorized, "invalid_request", ""},
		{"bad characters", []string{"Bearer ab\"c"}, http.StatusUnauthorized, "invalid_request", ""},
		{"padding in the middle", []string{"Bearer ab=c"}, http.StatusUnauthorized, "invalid_request", ""},
		{"two headers", []string{"Bearer abc", "Bearer abc"}, http.StatusUnauthorized, "invalid_request", ""},
		{"too long", []string{"Bearer " + strings.Repeat("a", maxTokenBytes+1)}, http.StatusUnauthorized, "invalid_request", ""},
		{"valid", []string{"Bearer tok_123.abc-_~+/=="}, http.StatusOK, "", "tok_123.abc-_~+/=="},
		{"lower-case scheme", []string{"bearer tok_lower"}, http.StatusOK, "", "tok_lower"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, a := range tc.auth {
				h.Add("Authorization", a)
			}
			resp, b := post(t, srv.URL+"/mcp", http.MethodPost, callBody(3, "whoami", nil), h)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, b)
			}
			r := decodeReply(t, b)
			if tc.wantStatus == http.StatusOK {
				text, isErr := toolText(t, r.Result)
				want := "bearer=" + tc.wantToken + " authorization-header="
				if isErr || text != want {
					t.Fatalf("tool saw %q, want %q", text, want)
				}
				return
			}
			challenge := resp.Header.Get("WWW-Authenticate")
			if !strings.HasPrefix(challenge, `Bearer resource_metadata="`+metadata+`"`) {
				t.Errorf("challenge %q", challenge)
			}
			if hasErr := strings.Contains(challenge, `error="`+tc.wantErr+`"`); tc.wantErr != "" && !hasErr {
				t.Errorf("challenge %q lacks error=%q", challenge, tc.wantErr)
			}
			if tc.wantErr == "" && strings.Contains(challenge, "error=") {
				t.Errorf("challenge %q has an error code for a missing token", challenge)
			}
			if r.Error == nil || string(r.ID) != "3" || !strings.Contains(string(r.Error.Data), metadata) {
				t.Errorf("401 body %s", b)
			}
		})
	}

	t.Run("optional when not required", func(t *testing.T) {
		open := newStack(t, HTTPConfig{}, testTools{})
		resp, b := post(t, open.URL+"/mcp", http.MethodPost, callBody(1, "whoami", nil), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if text, _ := toolText(t, decodeReply(t, b).Result); text != "bearer=<none> authorization-header=" {
			t.Errorf("tool saw %q", text)
		}
	})

	t.Run("public base URL names the metadata", func(t *testing.T) {
		proxied := newStack(t, HTTPConfig{RequireBearer: true, PublicBaseURL: "https://mcp.example/pdpp/"}, testTools{})
		resp, _ := post(t, proxied.URL+"/mcp", http.MethodPost, rpc(1, "ping", nil), nil)
		want := `Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/pdpp/mcp"`
		if got := resp.Header.Get("WWW-Authenticate"); got != want {
			t.Errorf("challenge %q, want %q", got, want)
		}
	})
}

func TestTokenForwardedPerRequest(t *testing.T) {
	rs := newTestRS(t, "good-token")
	srv := newStack(t, HTTPConfig{RequireBearer: true}, testTools{rsURL: rs.URL})
	tokens := []string{"good-token", "other-token", "good-token"}
	for i, tok := range tokens {
		resp, b := post(t, srv.URL+"/mcp", http.MethodPost, callBody(i, "rs_call", nil), hdr("Authorization", "Bearer "+tok))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: status %d: %s", i, resp.StatusCode, b)
		}
	}
	// Each RS call carried exactly the token of its own MCP request.
	got := rs.authorizations()
	for i, tok := range tokens {
		if i >= len(got) || got[i] != "Bearer "+tok {
			t.Fatalf("RS saw %q, want the tokens %q in order", got, tokens)
		}
	}
}

func TestResourceServer401BecomesToolError(t *testing.T) {
	rs := newTestRS(t, "good-token")
	srv := newStack(t, HTTPConfig{RequireBearer: true}, testTools{rsURL: rs.URL})
	tests := []struct {
		token   string
		wantErr bool
	}{
		{"good-token", false},
		{"revoked-token", true},
	}
	for _, tc := range tests {
		t.Run(tc.token, func(t *testing.T) {
			resp, b := post(t, srv.URL+"/mcp", http.MethodPost, callBody(1, "rs_call", nil), hdr("Authorization", "Bearer "+tc.token))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("transport status %d, want 200: %s", resp.StatusCode, b)
			}
			r := decodeReply(t, b)
			if r.Error != nil {
				t.Fatalf("JSON-RPC error instead of a tool result: %s", b)
			}
			text, isErr := toolText(t, r.Result)
			if isErr != tc.wantErr {
				t.Fatalf("isError %v, want %v: %s", isErr, tc.wantErr, text)
			}
			if tc.wantErr && !strings.Contains(text, "context.active_false") {
				t.Errorf("RS envelope lost: %s", text)
			}
		})
	}
}

func TestJSONOnlyReplies(t *testing.T) {
	// mcp-go alone, with the same stateless/no-streaming options, turns a
	// reply into an event stream as soon as a handler sends a notification.
	bare := httptest.NewServer(server.NewStreamableHTTPServer(newTestServer(testTools{}),
		server.WithStateLess(true), server.WithDisableStreaming(true)))
	t.Cleanup(bare.Close)
	ours := newStack(t, HTTPConfig{}, testTools{})
	modern := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/logLevel":           "debug",
	}, "name": "notify", "arguments": map[string]any{}}

	tests := []struct {
		name   string
		url    string
		body   string
		header http.Header
		wantCT string
	}{
		{"bare mcp-go streams", bare.URL, callBody(1, "notify", nil), hdr("MCP-Protocol-Version", "2025-11-25"), "text/event-stream"},
		{"legacy call", ours.URL + "/mcp", callBody(1, "notify", nil), hdr("MCP-Protocol-Version", "2025-11-25"), "application/json"},
		{"no version header", ours.URL + "/mcp", callBody(1, "notify", nil), nil, "application/json"},
		{"modern call", ours.URL + "/mcp", rpc(1, "tools/call", modern),
			hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "notify"), "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, tc.url, http.MethodPost, tc.body, tc.header)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.wantCT) {
				t.Fatalf("Content-Type %q, want %q\n%s", ct, tc.wantCT, b)
			}
			if tc.wantCT != "application/json" {
				return
			}
			r := decodeReply(t, b)
			text, isErr := toolText(t, r.Result)
			if isErr || !strings.HasPrefix(text, "notified ") {
				t.Fatalf("result %s", b)
			}
		})
	}
}

func TestNoSessionIDEverIssued(t *testing.T) {
	srv := newStack(t, HTTPConfig{}, testTools{})
	tests := []struct {
		name    string
		body    string
		session string
	}{
		{"initialize", initializeBody(1, "2025-11-25"), ""},
		{"initialize carrying an id", initializeBody(1, "2025-11-25"), "mcp-session-00000000-0000-0000-0000-000000000000"},
		{"call with a well-formed id", callBody(2, "echo", map[string]any{"text": "hi"}), "mcp-session-5f0c2a52-1c1d-4d8e-9d6c-7b4f0b0e9a11"},
		{"call with an arbitrary id", callBody(3, "echo", map[string]any{"text": "hi"}), "anything-at-all"},
		{"notification with an id", rpc(nil, "notifications/initialized", nil), "anything-at-all"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.session != "" {
				h.Set("Mcp-Session-Id", tc.session)
			}
			resp, b := post(t, srv.URL+"/mcp", http.MethodPost, tc.body, h)
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if got := resp.Header.Values("Mcp-Session-Id"); len(got) != 0 {
				t.Fatalf("session id issued: %q", got)
			}
			if resp.StatusCode == http.StatusOK {
				if r := decodeReply(t, b); r.Error != nil {
					t.Fatalf("error: %s", b)
				}
			}
		})
	}
}

func TestMalformedBodies(t *testing.T) {
	srv := newStack(t, HTTPConfig{}, testTools{})
	tests := []struct {
		name        string
		body        string
		contentType string
		wantStatus  int
		wantCode    int
	}{
		{"truncated object", `{"jsonrpc":"2.0","id":1,"method":`, "application/json", http.StatusBadRequest, mcp.PARSE_ERROR},
		{"not JSON", `hello`, "application/json", http.StatusBadRequest, mcp.PARSE_ERROR},
		{"empty", ``, "application/json", http.StatusBadRequest, mcp.PARSE_ERROR},
		{"JSON scalar", `42`, "application/json", http.StatusBadRequest, mcp.INVALID_REQUEST},
		{"trailing garbage", rpc(1, "ping", nil) + `}`, "application/json", http.StatusBadRequest, mcp.PARSE_ERROR},
		{"wrong JSON-RPC version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, "application/json", http.StatusOK, mcp.INVALID_REQUEST},
		{"unknown method", rpc(1, "prompts/list", nil), "application/json", http.StatusOK, mcp.METHOD_NOT_FOUND},
		{"text content type", rpc(1, "ping", nil), "text/plain", http.StatusUnsupportedMediaType, mcp.INVALID_REQUEST},
		{"json with charset", rpc(1, "ping", nil), "application/json; charset=utf-8", http.StatusOK, 0},
		// mcp-go answers this one in plain text; it must reach the client as JSON.
		{"stray client response", `{"jsonrpc":"2.0","id":5,"result":{"x":1}}`, "application/json", http.StatusBadRequest, mcp.INVALID_REQUEST},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, b)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			r := decodeReply(t, b)
			switch {
			case tc.wantCode == 0 && r.Error != nil:
				t.Errorf("unexpected error %s", b)
			case tc.wantCode != 0 && (r.Error == nil || r.Error.Code != tc.wantCode):
				t.Errorf("want code %d, got %s", tc.wantCode, b)
			}
		})
	}
}

func TestBatchRule(t *testing.T) {
	srv := newStack(t, HTTPConfig{}, testTools{})
	batch := "[" + rpc(1, "tools/list", nil) + "," + callBody(2, "echo", map[string]any{"text": "b"}) + "," +
		rpc(nil, "notifications/initialized", nil) + "]"
	tests := []struct {
		name       string
		version    string
		body       string
		wantStatus int
		wantIDs    []string // ids of the array reply, in order
		wantCode   int      // for a single error reply
	}{
		{"2025-03-26 handled", "2025-03-26", batch, http.StatusOK, []string{"1", "2"}, 0},
		{"no header means 2025-03-26", "", batch, http.StatusOK, []string{"1", "2"}, 0},
		{"only notifications", "2025-03-26", "[" + rpc(nil, "notifications/initialized", nil) + "]", http.StatusAccepted, nil, 0},
		{"initialize refused inside", "2025-03-26", "[" + initializeBody(5, "2025-03-26") + "," + rpc(6, "ping", nil) + "]", http.StatusOK, []string{"5", "6"}, 0},
		{"invalid element", "2025-03-26", "[1," + rpc(6, "ping", nil) + "]", http.StatusOK, []string{"null", "6"}, 0},
		{"empty", "2025-03-26", "[]", http.StatusBadRequest, nil, mcp.INVALID_REQUEST},
		{"broken", "2025-03-26", "[" + rpc(1, "ping", nil), http.StatusBadRequest, nil, mcp.PARSE_ERROR},
		{"2025-06-18 rejected", "2025-06-18", batch, http.StatusBadRequest, nil, mcp.INVALID_REQUEST},
		{"2025-11-25 rejected", "2025-11-25", batch, http.StatusBadRequest, nil, mcp.INVALID_REQUEST},
		{"2026-07-28 rejected", "2026-07-28", batch, http.StatusBadRequest, nil, mcp.INVALID_REQUEST},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.version != "" {
				h.Set("MCP-Protocol-Version", tc.version)
			}
			resp, b := post(t, srv.URL+"/mcp", http.MethodPost, tc.body, h)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, b)
			}
			if tc.wantStatus == http.StatusAccepted {
				if len(b) != 0 {
					t.Errorf("202 with body %s", b)
				}
				return
			}
			if tc.wantCode != 0 {
				if r := decodeReply(t, b); r.Error == nil || r.Error.Code != tc.wantCode {
					t.Errorf("want code %d: %s", tc.wantCode, b)
				}
				return
			}
			var replies []rpcReply
			if err := json.Unmarshal(b, &replies); err != nil {
				t.Fatalf("not an array: %s", b)
			}
			var ids []string
			for _, r := range replies {
				ids = append(ids, string(r.ID))
			}
			if !slices.Equal(ids, tc.wantIDs) {
				t.Fatalf("ids %v, want %v: %s", ids, tc.wantIDs, b)
			}
		})
	}
}

func TestCancellationCannotCrossClients(t *testing.T) {
	// Without sessions, mcp-go keys in-flight requests by id alone, so on a
	// bare mcp-go endpoint one client's notifications/cancelled stops another
	// client's call with the same id. Ours ignores the notification.
	tests := []struct {
		name     string
		endpoint func(tt testTools) string
		want     string
	}{
		{"bare mcp-go", func(tt testTools) string {
			bare := httptest.NewServer(server.NewStreamableHTTPServer(newTestServer(tt),
				server.WithStateLess(true), server.WithDisableStreaming(true)))
			t.Cleanup(bare.Close)
			return bare.URL
		}, "slow cancelled"},
		{"this transport", func(tt testTools) string { return newStack(t, HTTPConfig{}, tt).URL + "/mcp" }, "slow done"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The call runs until it is cancelled or the test releases it,
			// so neither outcome depends on how fast the notification lands.
			started, release := make(chan struct{}, 1), make(chan struct{})
			var releaseOnce sync.Once
			letFinish := func() { releaseOnce.Do(func() { close(release) }) }
			defer letFinish() // a call the cancellation missed ends too
			url := tc.endpoint(testTools{slowStarted: started, slowRelease: release})
			done := make(chan []byte, 1)
			go func() {
				_, b, err := rawPost(http.DefaultClient, url, http.MethodPost, callBody(7, "slow", nil), nil)
				if err != nil {
					b = []byte(err.Error())
				}
				done <- b
			}()
			<-started
			// Another client cancels "its" request 7.
			resp, b := post(t, url, http.MethodPost, rpc(nil, "notifications/cancelled", map[string]any{"requestId": 7}), nil)
			if resp.StatusCode != http.StatusAccepted || len(b) != 0 {
				t.Fatalf("cancellation: status %d body %s", resp.StatusCode, b)
			}
			if tc.want == "slow done" {
				// Give a wrongly honoured cancellation time to land, then
				// let the call finish.
				time.Sleep(50 * time.Millisecond)
				letFinish()
			}
			var reply []byte
			select {
			case reply = <-done:
			case <-time.After(testkit.Patience): // the cancellation was lost
				letFinish()
				reply = <-done
			}
			text, _ := toolText(t, decodeReply(t, reply).Result)
			if text != tc.want {
				t.Fatalf("call answered %q, want %q", text, tc.want)
			}
		})
	}
}

func TestSubscriptionsListenRefused(t *testing.T) {
	srv := newStack(t, HTTPConfig{}, testTools{})
	body := rpc(9, "subscriptions/listen", map[string]any{
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
		"notifications": map[string]any{"toolsListChanged": true},
	})
	done := make(chan struct{})
	var resp *http.Response
	var b []byte
	go func() {
		defer close(done)
		resp, b = post(t, srv.URL+"/mcp", http.MethodPost, body,
			hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen"))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("subscriptions/listen held the request open")
	}
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if r := decodeReply(t, b); r.Error == nil || r.Error.Code != mcp.METHOD_NOT_FOUND || string(r.ID) != "9" {
		t.Fatalf("body %s", b)
	}
}

func TestCapabilitiesToolsAndResourcesOnly(t *testing.T) {
	srv := newStack(t, HTTPConfig{}, testTools{})
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run("initialize "+v, func(t *testing.T) {
			resp, b := post(t, srv.URL+"/mcp", http.MethodPost, initializeBody(1, v), nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var res struct {
				ProtocolVersion string                     `json:"protocolVersion"`
				Capabilities    map[string]json.RawMessage `json:"capabilities"`
				Instructions    string                     `json:"instructions"`
			}
			if err := json.Unmarshal(decodeReply(t, b).Result, &res); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for k := range res.Capabilities {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, []string{"resources", "tools"}) {
				t.Errorf("capabilities %v, want only resources and tools", keys)
			}
			if res.Instructions != testInstructions || res.ProtocolVersion != v {
				t.Errorf("instructions %q, version %q", res.Instructions, res.ProtocolVersion)
			}
		})
	}
	t.Run("server/discover 2026-07-28", func(t *testing.T) {
		body := rpc(1, "server/discover", map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}})
		resp, b := post(t, srv.URL+"/mcp", http.MethodPost, body, hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover"))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var res struct {
			SupportedVersions []string                   `json:"supportedVersions"`
			Capabilities      map[string]json.RawMessage `json:"capabilities"`
			Instructions      string                     `json:"instructions"`
		}
		if err := json.Unmarshal(decodeReply(t, b).Result, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Capabilities) != 2 || res.Capabilities["tools"] == nil || res.Capabilities["resources"] == nil {
			t.Errorf("capabilities %v", res.Capabilities)
		}
		if !slices.Equal(res.SupportedVersions, DefaultProtocolVersions()) || res.Instructions != testInstructions {
			t.Errorf("discover result %s", b)
		}
		if resp.Header.Get("Mcp-Session-Id") != "" {
			t.Error("session id issued on the modern path")
		}
	})
}

func TestVerifyCapabilities(t *testing.T) {
	prompt := func(s *server.MCPServer) {
		s.AddPrompt(mcp.NewPrompt("p"), func(ctx context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	}
	tests := []struct {
		name    string
		opts    []server.ServerOption
		mutate  func(*server.MCPServer)
		wantErr string
	}{
		{"tools and resources", nil, nil, ""},
		{"logging", []server.ServerOption{server.WithLogging()}, nil, `"logging"`},
		{"completions", []server.ServerOption{server.WithCompletions()}, nil, `"completions"`},
		{"prompt capability", []server.ServerOption{server.WithPromptCapabilities(false)}, nil, `"prompts"`},
		{"a prompt added", nil, prompt, `"prompts"`},
		{"tools listChanged", []server.ServerOption{server.WithToolCapabilities(true)}, nil, "listChanged"},
		{"resource subscribe", []server.ServerOption{server.WithResourceCapabilities(true, false)}, nil, "listChanged/subscribe"},
		{"no instructions", []server.ServerOption{server.WithInstructions("")}, nil, "instructions"},
		{"MCP Apps extension", []server.ServerOption{server.WithExtensions(map[string]any{
			"io.modelcontextprotocol/ui": map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}}})}, nil, ""},
		{"another extension", []server.ServerOption{server.WithExtensions(map[string]any{
			"io.modelcontextprotocol/ui": map[string]any{}, "io.modelcontextprotocol/tasks": map[string]any{}})}, nil, `"io.modelcontextprotocol/tasks"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(testTools{}, tc.opts...)
			if tc.mutate != nil {
				tc.mutate(s)
			}
			err := VerifyCapabilities(s)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one mentioning %s", err, tc.wantErr)
			}
			if _, err := NewHTTPHandler(s, HTTPConfig{}); err == nil {
				t.Fatal("NewHTTPHandler accepted the server")
			}
		})
	}
	t.Run("no tools", func(t *testing.T) {
		s := server.NewMCPServer("empty", "0", server.WithInstructions("x"))
		if err := VerifyCapabilities(s); err == nil || !strings.Contains(err.Error(), "no tools") {
			t.Fatalf("error %v", err)
		}
	})
}

package transport

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// verdictHook is an Authenticate hook that answers from a table (any other
// token is invalid) and counts its calls.
func verdictHook(table map[string]AuthVerdict, calls *atomic.Int64) func(context.Context, string) AuthVerdict {
	return func(ctx context.Context, token string) AuthVerdict {
		calls.Add(1)
		if tok, ok := BearerFromContext(ctx); !ok || tok != token {
			return AuthVerdict{Outcome: AuthUnavailable, Reason: "test", Message: "hook called without the bearer in its context"}
		}
		if v, ok := table[token]; ok {
			return v
		}
		return AuthVerdict{Outcome: AuthInvalidToken}
	}
}

// TestAuthenticateVerdicts: every /mcp POST's bearer is decided before any
// message or batch item is dispatched: 401 invalid_token, 403 for refused
// tokens, 503 with Retry-After when the check is unavailable.
func TestAuthenticateVerdicts(t *testing.T) {
	rs := newTestRS(t, "good")
	var calls atomic.Int64
	srv := newStack(t, HTTPConfig{RequireBearer: true, Authenticate: verdictHook(map[string]AuthVerdict{
		"good":  {Outcome: AuthAccept},
		"owner": {Outcome: AuthForbidden, Reason: "owner_token_refused", Message: "owner tokens are refused; run `pdpp connect <provider-url>`"},
		"down":  {Outcome: AuthUnavailable, Reason: "token_check_unavailable", Message: "the token could not be checked; retry"},
	}, &calls)}, testTools{rsURL: rs.URL})
	bodies := map[string]string{
		"initialize": initializeBody(1, "2025-06-18"),
		"tools/list": rpc(2, "tools/list", nil),
		"tools/call": callBody(3, "rs_call", nil),
		"batch":      `[` + callBody(4, "rs_call", nil) + `,` + rpc(5, "tools/list", nil) + `]`,
	}
	cases := []struct {
		token  string
		status int
		reason string
	}{
		{"wrongtoken", http.StatusUnauthorized, "invalid_token"},
		{"owner", http.StatusForbidden, "owner_token_refused"},
		{"down", http.StatusServiceUnavailable, "token_check_unavailable"},
		{"good", http.StatusOK, ""},
	}
	for _, tc := range cases {
		for name, body := range bodies {
			t.Run(tc.token+" "+name, func(t *testing.T) {
				before := len(rs.authorizations())
				calls.Store(0)
				h := hdr("Authorization", "Bearer "+tc.token)
				if name == "batch" {
					h.Del("MCP-Protocol-Version") // batches exist only in 2025-03-26
				} else {
					h.Set("MCP-Protocol-Version", "2025-06-18")
				}
				resp, b := post(t, srv.URL+"/mcp", http.MethodPost, body, h)
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
				}
				if calls.Load() != 1 {
					t.Errorf("Authenticate called %d times, want once", calls.Load())
				}
				if tc.status == http.StatusOK {
					return
				}
				if n := len(rs.authorizations()) - before; n != 0 {
					t.Errorf("a refused request still ran %d RS calls", n)
				}
				r := decodeReply(t, b)
				if r.Error == nil {
					t.Fatalf("no JSON-RPC error: %s", b)
				}
				var data map[string]string
				_ = json.Unmarshal(r.Error.Data, &data)
				if data["reason"] != tc.reason {
					t.Fatalf("error body: %s", b)
				}
				switch tc.status {
				case http.StatusUnauthorized:
					ch := resp.Header.Get("WWW-Authenticate")
					if !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, `resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`) {
						t.Errorf("challenge: %q", ch)
					}
				case http.StatusForbidden:
					if !strings.Contains(r.Error.Message, "pdpp connect") {
						t.Errorf("403 does not say why: %s", b)
					}
				case http.StatusServiceUnavailable:
					if resp.Header.Get("Retry-After") == "" {
						t.Errorf("503 without Retry-After")
					}
				}
			})
		}
	}
}

// TestRejectedMidCall: a bearer the hook accepted but that the RS refuses
// during a tool call turns the HTTP reply into 401 invalid_token, unless a
// batch already answered an item: a batch answers every item it ran, the
// refused item is its own error, and the items after it are answered, not
// run.
func TestRejectedMidCall(t *testing.T) {
	rs := newTestRS(t, "good")
	var calls atomic.Int64
	srv := newStack(t, HTTPConfig{RequireBearer: true, Authenticate: verdictHook(map[string]AuthVerdict{
		"good": {Outcome: AuthAccept}, "revoked": {Outcome: AuthAccept},
	}, &calls)}, testTools{rsURL: rs.URL})
	echo := func(id int) string { return callBody(id, "echo", map[string]any{"text": "x"}) }
	cases := []struct {
		name, token, body string
		version           string
		status            int
		// items: for a 200 batch, what each answer is, in order:
		// "ok", "tool error" or "not run".
		items []string
	}{
		{"call, RS accepts", "good", callBody(1, "rs_call", nil), "2025-06-18", http.StatusOK, nil},
		{"call, RS rejects", "revoked", callBody(2, "rs_call", nil), "2025-06-18", http.StatusUnauthorized, nil},
		{"batch, first item rejected", "revoked", `[` + callBody(3, "rs_call", nil) + `,` + echo(4) + `]`, "", http.StatusUnauthorized, nil},
		{"batch, a notification then the rejected item", "revoked", `[{"jsonrpc":"2.0","method":"notifications/initialized"},` + callBody(5, "rs_call", nil) + `]`, "", http.StatusUnauthorized, nil},
		{"batch, rejected after an answer", "revoked", `[` + echo(6) + `,` + callBody(7, "rs_call", nil) + `,` + echo(8) + `]`, "", http.StatusOK,
			[]string{"ok", "tool error", "not run"}},
		{"no RS call", "revoked", echo(9), "2025-06-18", http.StatusOK, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := hdr("Authorization", "Bearer "+tc.token)
			if tc.version != "" {
				h.Set("MCP-Protocol-Version", tc.version)
			}
			resp, b := post(t, srv.URL+"/mcp", http.MethodPost, tc.body, h)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status == http.StatusUnauthorized && !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Errorf("challenge: %q", resp.Header.Get("WWW-Authenticate"))
			}
			if tc.items == nil {
				return
			}
			var replies []json.RawMessage
			if err := json.Unmarshal([]byte(b), &replies); err != nil || len(replies) != len(tc.items) {
				t.Fatalf("want %d answers: %s", len(tc.items), b)
			}
			for i, raw := range replies {
				r := decodeReply(t, raw)
				got := "ok"
				switch {
				case r.Error != nil && r.Error.Code == codeUnauthorized && strings.Contains(string(r.Error.Data), `"invalid_token"`):
					got = "not run"
				case r.Error != nil:
					got = "error " + r.Error.Message
				default:
					if _, isErr := toolText(t, r.Result); isErr {
						got = "tool error"
					}
				}
				if got != tc.items[i] {
					t.Errorf("answer %d: %s, want %s (%s)", i, got, tc.items[i], raw)
				}
			}
		})
	}
}

// hostGet sends a request with an explicit Host header.
func hostGet(t *testing.T, method, url, host, body string, header http.Header) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestAllowedHosts: /mcp, the metadata and the challenge are served only
// for allowed Host values (421 otherwise, naming nothing of the request);
// health probes answer whatever the Host.
func TestAllowedHosts(t *testing.T) {
	configs := map[string]HTTPConfig{
		"default":  {RequireBearer: true},
		"public":   {RequireBearer: true, PublicBaseURL: "https://mcp.example.com"},
		"explicit": {RequireBearer: true, AllowedHosts: []string{"a.example:8443", "b.example"}},
		"any":      {RequireBearer: true, AllowedHosts: []string{"*"}},
	}
	servers := map[string]string{}
	for name, cfg := range configs {
		cfg.AuthorizationServers = []string{"https://as.example"}
		servers[name] = newStack(t, cfg, testTools{}).URL
	}
	cases := []struct {
		config, host, path string
		status             int
	}{
		{"default", "evil.example", "/mcp", http.StatusMisdirectedRequest},
		{"default", "evil.example", "/.well-known/oauth-protected-resource/mcp", http.StatusMisdirectedRequest},
		{"default", "evil.example", "/healthz", http.StatusOK},
		{"default", "10.1.2.3:8787", "/readyz", http.StatusOK},
		{"default", "localhost:8787", "/mcp", http.StatusUnauthorized},
		{"default", "[::1]:8787", "/mcp", http.StatusUnauthorized},
		{"default", "127.0.0.1", "/.well-known/oauth-protected-resource/mcp", http.StatusOK},
		{"public", "mcp.example.com", "/mcp", http.StatusUnauthorized},
		{"public", "MCP.example.com:443", "/.well-known/oauth-protected-resource/mcp", http.StatusOK},
		{"public", "evil.example", "/mcp", http.StatusMisdirectedRequest},
		{"public", "localhost", "/mcp", http.StatusUnauthorized},
		{"explicit", "a.example:8443", "/mcp", http.StatusUnauthorized},
		{"explicit", "a.example:9", "/mcp", http.StatusMisdirectedRequest},
		{"explicit", "b.example:1234", "/mcp", http.StatusUnauthorized},
		{"explicit", "localhost", "/mcp", http.StatusMisdirectedRequest},
		{"any", "evil.example", "/mcp", http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.config+" "+tc.host+" "+tc.path, func(t *testing.T) {
			method, body := http.MethodGet, ""
			if tc.path == "/mcp" {
				method, body = http.MethodPost, rpc(1, "tools/list", nil)
			}
			resp, b := hostGet(t, method, servers[tc.config]+tc.path, tc.host, body, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status == http.StatusMisdirectedRequest && (!strings.Contains(b, "allowed-hosts") || strings.Contains(b, "evil")) {
				t.Errorf("421 body: %s", b)
			}
			for _, v := range append(resp.Header.Values("WWW-Authenticate"), b) {
				if strings.Contains(v, "evil.example") && tc.config != "any" {
					t.Errorf("reply names the request's Host: %s", v)
				}
			}
			if tc.config == "public" && resp.StatusCode != http.StatusMisdirectedRequest && strings.Contains(b+resp.Header.Get("WWW-Authenticate"), "localhost") {
				t.Errorf("with a public base URL the reply must name it, not the Host: %s", b)
			}
		})
	}
}

func TestAllowedHostsConfig(t *testing.T) {
	for _, bad := range []string{"a.example/x", "a.example:99999", "user@a.example"} {
		if _, err := (HTTPConfig{AllowedHosts: []string{bad}}).Effective(); err == nil {
			t.Errorf("allowed host %q accepted", bad)
		}
	}
}

// TestHostWarning: a listener beyond loopback without a public base URL or
// allowed hosts is served but warned about at start.
func TestHostWarning(t *testing.T) {
	cases := []struct {
		name string
		cfg  HTTPConfig
		warn bool
	}{
		{"loopback", HTTPConfig{Listen: "127.0.0.1:0"}, false},
		{"all interfaces", HTTPConfig{Listen: "0.0.0.0:8787"}, true},
		{"all interfaces with public base", HTTPConfig{Listen: "0.0.0.0:8787", PublicBaseURL: "https://mcp.example.com"}, false},
		{"all interfaces with allowed hosts", HTTPConfig{Listen: ":8787", AllowedHosts: []string{"mcp.internal"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf testkit.Buffer
			tc.cfg.Logger = slogTo(&buf)
			if _, err := NewHTTPHandler(newTestServer(testTools{}), tc.cfg); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(buf.String(), "--allowed-hosts"); got != tc.warn {
				t.Fatalf("warning logged = %v, want %v: %s", got, tc.warn, buf.String())
			}
		})
	}
}

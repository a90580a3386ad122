package cli

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
)

// faultRS is the demo RS behind a proxy that records request paths and
// answers with the current fault when it matches.
type faultRS struct {
	url   string
	mu    sync.Mutex
	paths []string
	fault atomic.Pointer[func(w http.ResponseWriter, r *http.Request) bool]
}

func newFaultRS(t *testing.T) *faultRS {
	t.Helper()
	demo, err := demors.New(demors.Config{Tokens: fixedTokens})
	if err != nil {
		t.Fatal(err)
	}
	f := &faultRS{}
	next := demo.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		if fn := f.fault.Load(); fn != nil && (*fn)(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); demo.Close() })
	f.url = srv.URL
	return f
}

func (f *faultRS) set(fn func(w http.ResponseWriter, r *http.Request) bool) { f.fault.Store(&fn) }

// take returns the paths requested since the last take.
func (f *faultRS) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.paths
	f.paths = nil
	return p
}

func failWith(status int, body string, match func(*http.Request) bool) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !match(r) {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
		return true
	}
}

func mcpPost(t *testing.T, url, token, version, body string) (*http.Response, string) {
	t.Helper()
	header := map[string]string{"Authorization": "Bearer " + token}
	if version != "" {
		header["MCP-Protocol-Version"] = version
	}
	resp, b := postRPC(t, url, body, header)
	return resp, string(b)
}

const (
	initBody  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	listBody  = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	fetchBody = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch","arguments":{"id":"cin_demo_loom_main/transcripts:tr-5"}}}`
	batchBody = `[` + fetchBody + `,` + listBody + `]`
)

func onlySchemaReads(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		if p != "/v1/schema" {
			t.Errorf("RS reached %s", p)
		}
	}
}

// TestHTTPTokenVerdicts: against the demo RS, a bearer the RS rejects gets
// 401 invalid_token on initialize, tools/list, calls and batches with no
// tool or batch item run; an owner bearer gets 403 saying why; a client
// bearer is served.
func TestHTTPTokenVerdicts(t *testing.T) {
	rs := newFaultRS(t)
	mcpURL := startHTTP(t, rs.url)
	cases := []struct {
		token  string
		status int
		want   string
	}{
		{"wrongtoken", http.StatusUnauthorized, "not accepted"},
		{fixedTokens["owner"], http.StatusForbidden, "pdpp connect"},
		{fixedTokens["client"], http.StatusOK, `"result"`},
	}
	for _, tc := range cases {
		for _, req := range []struct{ name, version, body string }{
			{"initialize", "2025-06-18", initBody}, {"tools/list", "2025-06-18", listBody},
			{"fetch", "2025-06-18", fetchBody}, {"batch", "", batchBody},
		} {
			t.Run(tc.token+" "+req.name, func(t *testing.T) {
				rs.take()
				resp, b := mcpPost(t, mcpURL, tc.token, req.version, req.body)
				if resp.StatusCode != tc.status || !strings.Contains(b, tc.want) {
					t.Fatalf("status %d (want %d): %s", resp.StatusCode, tc.status, b)
				}
				switch tc.status {
				case http.StatusUnauthorized:
					ch := resp.Header.Get("WWW-Authenticate")
					if !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, `resource_metadata="http://127.0.0.1:`) {
						t.Errorf("challenge: %q", ch)
					}
					onlySchemaReads(t, rs.take())
				case http.StatusForbidden:
					onlySchemaReads(t, rs.take())
				}
			})
		}
	}
}

// TestHTTPTokenCheckUnavailable: with the RS's schema endpoint failing, every
// request is 503 with Retry-After and no data request reaches the RS; once
// it answers, the same bearer is served.
func TestHTTPTokenCheckUnavailable(t *testing.T) {
	rs := newFaultRS(t)
	mcpURL := startHTTP(t, rs.url)
	isSchema := func(r *http.Request) bool { return r.URL.Path == "/v1/schema" }
	for _, fault := range []struct {
		name string
		fn   func(http.ResponseWriter, *http.Request) bool
	}{
		{"503", failWith(http.StatusServiceUnavailable, `{"error":{"type":"api_error","code":"unavailable","message":"down"}}`, isSchema)},
		{"view refused and plain 500", func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Query().Get("view") == "compact" {
				return failWith(http.StatusBadRequest, `{"error":{"type":"invalid_request_error","code":"invalid_request","param":"view","message":"unknown view"}}`, isSchema)(w, r)
			}
			return failWith(http.StatusInternalServerError, `oops`, isSchema)(w, r)
		}},
		{"null body", failWith(http.StatusOK, `null`, isSchema)},
	} {
		t.Run(fault.name, func(t *testing.T) {
			rs.set(fault.fn)
			for _, tok := range []string{fixedTokens["owner"], fixedTokens["client"]} {
				rs.take()
				resp, b := mcpPost(t, mcpURL, tok, "2025-06-18", fetchBody)
				if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(b, "token_check_unavailable") {
					t.Fatalf("status %d Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
				}
				onlySchemaReads(t, rs.take())
			}
		})
	}
	t.Run("RS unreachable", func(t *testing.T) {
		gone := httptest.NewServer(http.NotFoundHandler())
		gone.Close()
		resp, b := mcpPost(t, startHTTP(t, gone.URL), fixedTokens["client"], "2025-06-18", listBody)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	})
	rs.set(func(http.ResponseWriter, *http.Request) bool { return false })
	if resp, b := mcpPost(t, mcpURL, fixedTokens["client"], "2025-06-18", fetchBody); resp.StatusCode != http.StatusOK || strings.Contains(b, `"isError":true`) {
		t.Fatalf("after recovery: %d %s", resp.StatusCode, b)
	}
}

// TestHTTPRejectedMidCall: a client bearer whose verdict is cached but that
// the RS answers 401 on a data call gets HTTP 401, and its verdict is
// evicted (the next request reads the schema again).
func TestHTTPRejectedMidCall(t *testing.T) {
	rs := newFaultRS(t)
	mcpURL := startHTTP(t, rs.url)
	tok := fixedTokens["client"]
	if resp, b := mcpPost(t, mcpURL, tok, "2025-06-18", listBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, b)
	}
	rs.take()
	if resp, _ := mcpPost(t, mcpURL, tok, "2025-06-18", listBody); resp.StatusCode != http.StatusOK {
		t.Fatal("tools/list failed")
	}
	if p := rs.take(); len(p) != 0 {
		t.Fatalf("a cached verdict still read the RS: %v", p)
	}
	rs.set(failWith(http.StatusUnauthorized, `{"error":{"type":"authentication_error","code":"context.active_false","message":"token is not active"}}`,
		func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/records") }))
	for _, req := range []struct{ name, version, body string }{{"call", "2025-06-18", fetchBody}, {"batch", "", batchBody}} {
		t.Run(req.name, func(t *testing.T) {
			resp, b := mcpPost(t, mcpURL, tok, req.version, req.body)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b)
			}
			rs.take()
			if resp, _ := mcpPost(t, mcpURL, tok, "2025-06-18", listBody); resp.StatusCode != http.StatusOK {
				t.Fatal("tools/list after the 401 failed")
			}
			if p := rs.take(); len(p) != 1 || p[0] != "/v1/schema" {
				t.Fatalf("after a 401 the verdict must be read again: %v", p)
			}
		})
	}
}

// TestHTTPAllowedHosts: the PDPP server answers 421 to an unlisted Host and
// serves one named with --allowed-hosts (flag wiring).
func TestHTTPAllowedHosts(t *testing.T) {
	rs := newFaultRS(t)
	h := httpFlagsFor(rs.url)
	h.Hosts = "mcp.internal:8443"
	mcpURL := startHTTPWith(t, &h)
	for _, tc := range []struct {
		host   string
		status int
	}{{"evil.example", http.StatusMisdirectedRequest}, {"mcp.internal:8443", http.StatusOK}, {"localhost", http.StatusMisdirectedRequest}} {
		req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(listBody))
		req.Host = tc.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+fixedTokens["client"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("Host %s: status %d, want %d", tc.host, resp.StatusCode, tc.status)
		}
	}
}

// TestHTTPRejectedTokenMarkClient: an mcp-go client sees a rejected bearer as
// an authorization-required error carrying the metadata URL, both at
// initialize and when the token is revoked between calls.
func TestHTTPRejectedTokenMarkClient(t *testing.T) {
	rs := newFaultRS(t)
	mcpURL := startHTTP(t, rs.url)
	connect := func(token string) (*client.Client, error) {
		c, err := client.NewStreamableHttpClient(mcpURL, mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = c.Close() })
		return c, startSession(t.Context(), c, mcp.LATEST_PROTOCOL_VERSION, "trust-test")
	}
	wantAuthErr := func(t *testing.T, err error) {
		t.Helper()
		var ae *mcptransport.AuthorizationRequiredError
		if !errors.As(err, &ae) || !strings.HasSuffix(ae.ResourceMetadataURL, "/.well-known/oauth-protected-resource/mcp") {
			t.Fatalf("want an authorization-required error with the metadata URL, got %v", err)
		}
	}
	_, err := connect("wrongtoken")
	wantAuthErr(t, err)

	c, err := connect(fixedTokens["client"])
	if err != nil {
		t.Fatal(err)
	}
	rs.set(failWith(http.StatusUnauthorized, `{"error":{"type":"authentication_error","code":"context.active_false","message":"token is not active"}}`,
		func(r *http.Request) bool { return r.URL.Path != "/v1/schema" }))
	req := mcp.CallToolRequest{}
	req.Params.Name = "fetch"
	req.Params.Arguments = map[string]any{"id": "cin_demo_loom_main/transcripts:tr-5"}
	_, err = c.CallTool(t.Context(), req)
	wantAuthErr(t, err)
}

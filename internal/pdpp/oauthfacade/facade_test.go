package oauthfacade_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/oauthfacade"
)

// provider is a stand-in for the provider's authorization server: it serves
// metadata (changed by the test through doc and status) and counts fetches.
type provider struct {
	srv     *httptest.Server
	fetches atomic.Int64
	hang    atomic.Bool // answer nothing until the request or the test ends
	mu      sync.Mutex
	status  int
	body    func(issuer string) string
}

// standardDoc is a metadata document shaped like the reference authorization
// server's, with the members the facade must keep or drop.
func standardDoc(iss string) string {
	b, _ := json.Marshal(map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + "/oauth/authorize",
		"token_endpoint":                                 iss + "/oauth/token",
		"registration_endpoint":                          iss + "/oauth/register",
		"pushed_authorization_request_endpoint":          iss + "/oauth/par",
		"introspection_endpoint":                         iss + "/oauth/introspect",
		"code_challenge_methods_supported":               []string{"S256"},
		"response_types_supported":                       []string{"code"},
		"client_id_metadata_document_supported":          true,
		"pdpp_authorization_details_types_supported":     []string{"https://pdpp.dev/data-access"},
		"authorization_response_iss_parameter_supported": true,
	})
	return string(b)
}

func newProvider(t *testing.T) *provider {
	t.Helper()
	p := &provider{status: 200, body: standardDoc}
	stop := make(chan struct{})
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != oauthfacade.PathMetadata {
			http.NotFound(w, r)
			return
		}
		p.fetches.Add(1)
		if p.hang.Load() {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		p.mu.Lock()
		status, body := p.status, p.body
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body(p.srv.URL))
	}))
	t.Cleanup(p.srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first: a hanging answer ends before Close waits for it
	return p
}

func (p *provider) set(status int, body func(string) string) {
	p.mu.Lock()
	p.status, p.body = status, body
	p.mu.Unlock()
}

// served is the facade mounted on the hosted transport, as the http command
// mounts it, with a clock the test moves.
type served struct {
	url    string
	facade *oauthfacade.Facade
	mu     sync.Mutex
	now    time.Time
}

func (s *served) advance(d time.Duration) { s.mu.Lock(); s.now = s.now.Add(d); s.mu.Unlock() }

func serve(t *testing.T, cfg oauthfacade.Config, publicBase string) *served {
	t.Helper()
	if cfg.Source == "" {
		cfg.Source = "https://registry.pdpp.dev/connectors/loom"
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	f, err := oauthfacade.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &served{facade: f, now: time.Now()}
	oauthfacade.SetClock(f, func() time.Time { s.mu.Lock(); defer s.mu.Unlock(); return s.now })
	mcp := server.NewMCPServer("facade-test", "1", server.WithToolCapabilities(false), server.WithInstructions("test"))
	h, err := transport.NewHTTPHandler(mcp, transport.HTTPConfig{
		RequireBearer: true, PublicBaseURL: publicBase, Logger: slog.New(slog.DiscardHandler),
		AuthorizationServersFunc: f.AuthorizationServers, ExtraRoutes: f.Routes(),
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	s.url = hs.URL
	return s
}

func issuerOf(p *provider) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return p.srv.URL, nil }
}

func getJSON(t *testing.T, u string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestMetadataNamesThisServer: the resource metadata names this server as the
// authorization server, and its RFC 8414 (and OpenID) document is the
// provider's with only issuer and authorization_endpoint changed, so a client's
// issuer check passes while registration, tokens and PAR stay at the provider.
func TestMetadataNamesThisServer(t *testing.T) {
	p := newProvider(t)
	for _, tc := range []struct{ name, publicBase string }{{"base from Host", ""}, {"public base URL", "https://mcp.example.com"}} {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, oauthfacade.Config{Issuer: issuerOf(p)}, tc.publicBase)
			base := s.url
			if tc.publicBase != "" {
				base = tc.publicBase
			}
			_, prm := getJSON(t, s.url+"/.well-known/oauth-protected-resource/mcp")
			if got, _ := json.Marshal(prm["authorization_servers"]); string(got) != `["`+base+`"]` {
				t.Fatalf("authorization_servers %s, want [%s]", got, base)
			}
			var want map[string]any
			_ = json.Unmarshal([]byte(standardDoc(p.srv.URL)), &want)
			want["issuer"] = base
			want["authorization_endpoint"] = base + "/oauth/authorize"
			delete(want, "authorization_response_iss_parameter_supported")
			for _, path := range []string{oauthfacade.PathMetadata, oauthfacade.PathOpenID} {
				status, got := getJSON(t, s.url+path)
				a, _ := json.Marshal(got)
				b, _ := json.Marshal(want)
				if status != 200 || string(a) != string(b) {
					t.Fatalf("%s: %d\n got %s\nwant %s", path, status, a, b)
				}
				if _, ok := got["scopes_supported"]; ok {
					t.Fatal("scopes_supported must not appear")
				}
			}
		})
	}
	t.Run("go-sdk client accepts the issuer", func(t *testing.T) {
		s := serve(t, oauthfacade.Config{Issuer: issuerOf(p)}, "")
		asm, err := auth.GetAuthServerMetadata(context.Background(), s.url, http.DefaultClient)
		if err != nil || asm == nil {
			t.Fatalf("go-sdk metadata discovery: %v", err)
		}
		if asm.Issuer != s.url || asm.TokenEndpoint != p.srv.URL+"/oauth/token" || asm.RegistrationEndpoint != p.srv.URL+"/oauth/register" {
			t.Fatalf("client sees %+v", asm)
		}
	})
}

// TestMetadataCache: the provider's document is fetched once per lifetime;
// a failed refresh serves the last document; with nothing cached a failure is
// 503 and is not retried at once.
func TestMetadataCache(t *testing.T) {
	p := newProvider(t)
	s := serve(t, oauthfacade.Config{Issuer: issuerOf(p), TTL: time.Minute}, "")
	get := func() int { status, _ := getJSON(t, s.url+oauthfacade.PathMetadata); return status }
	for range 3 {
		if get() != 200 {
			t.Fatal("metadata not served")
		}
	}
	if n := p.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches within the lifetime, want 1", n)
	}
	s.advance(time.Minute + time.Second)
	get()
	if n := p.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after the lifetime, want 2", n)
	}
	p.set(500, standardDoc)
	s.advance(time.Minute + time.Second)
	if get() != 200 || get() != 200 {
		t.Fatal("a failed refresh must serve the last document")
	}
	if n := p.fetches.Load(); n != 3 {
		t.Fatalf("%d fetches, want 3 (one failed refresh, then none for a while)", n)
	}

	cold := serve(t, oauthfacade.Config{Issuer: issuerOf(p)}, "")
	before := p.fetches.Load()
	for range 3 {
		resp, err := http.Get(cold.url + oauthfacade.PathMetadata)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("no metadata yet: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if n := p.fetches.Load() - before; n != 1 {
		t.Fatalf("%d fetches for three requests while the provider fails, want 1", n)
	}
}

// TestHangingProvider: while the provider hangs, concurrent metadata requests
// share one fetch, which ends at the fetch timeout; its failure is remembered
// from that moment, so the requests after it are answered at once; with a
// document cached they are answered with it without waiting the fetch out; and
// requests beyond the facade's slots are refused at once.
func TestHangingProvider(t *testing.T) {
	tests := []struct {
		name       string
		warm       bool
		wantStatus int
		within     time.Duration
	}{
		{"nothing cached", false, 503, 7 * time.Second},
		{"last document cached", true, 200, 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t)
			s := serve(t, oauthfacade.Config{Issuer: issuerOf(p), TTL: time.Minute, Client: &http.Client{Timeout: 30 * time.Second}}, "")
			get := func() int { status, _ := getJSON(t, s.url+oauthfacade.PathMetadata); return status }
			if tc.warm {
				if get() != 200 {
					t.Fatal("metadata not served")
				}
				s.advance(2 * time.Minute)
			}
			p.hang.Store(true)
			before := p.fetches.Load()
			start := time.Now()
			statuses := make([]int, 6)
			var wg sync.WaitGroup
			for i := range statuses {
				wg.Go(func() { statuses[i] = get() })
			}
			wg.Wait()
			took := time.Since(start)
			for i, st := range statuses {
				if st != tc.wantStatus {
					t.Fatalf("request %d: %d, want %d", i, st, tc.wantStatus)
				}
			}
			if took > tc.within {
				t.Fatalf("6 concurrent requests took %v, want within %v", took, tc.within)
			}
			// Six more right after: the failure (or the fetch still hanging) is
			// not fetched again.
			start = time.Now()
			for range 6 {
				if st := get(); st != tc.wantStatus {
					t.Fatalf("a request after the failure: %d, want %d", st, tc.wantStatus)
				}
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("6 requests after the failure took %v", d)
			}
			if n := p.fetches.Load() - before; n > 2 {
				t.Fatalf("%d upstream fetches for 12 requests, want at most 2", n)
			}
		})
	}
	t.Run("requests beyond the slots are refused at once", func(t *testing.T) {
		p := newProvider(t)
		p.hang.Store(true)
		s := serve(t, oauthfacade.Config{Issuer: issuerOf(p), MaxConcurrent: 2}, "")
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { getJSON(t, s.url+oauthfacade.PathMetadata) })
		}
		deadline := time.Now().Add(3 * time.Second)
		for p.fetches.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // the second request takes its slot
		start := time.Now()
		resp, err := http.Get(s.url + oauthfacade.PathAuthorize + "?client_id=x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || time.Since(start) > time.Second {
			t.Fatalf("third request: %d, Retry-After %q, after %v", resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(start))
		}
		wg.Wait()
	})
}

// TestProviderMetadataChecked: a document a client would refuse, or that
// breaks a bound, is not served.
func TestProviderMetadataChecked(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   func(string) string
		client *http.Client
	}{
		{"other issuer", 200, func(string) string { return standardDoc("https://other.example") }, nil},
		{"not JSON", 200, func(string) string { return "<html>" }, nil},
		{"over the size bound", 200, func(iss string) string {
			return strings.Replace(standardDoc(iss), `"issuer"`, `"pad":"`+strings.Repeat("x", 300<<10)+`","issuer"`, 1)
		}, nil},
		{"script authorization endpoint", 200, func(iss string) string {
			return strings.Replace(standardDoc(iss), iss+"/oauth/authorize", "javascript:alert(1)", 1)
		}, nil},
		{"no document", 404, standardDoc, nil},
		{"slow provider", 200, func(iss string) string { time.Sleep(300 * time.Millisecond); return standardDoc(iss) }, &http.Client{Timeout: 100 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t)
			p.set(tc.status, tc.body)
			s := serve(t, oauthfacade.Config{Issuer: issuerOf(p), Client: tc.client}, "")
			for _, path := range []string{oauthfacade.PathMetadata, oauthfacade.PathAuthorize + "?client_id=x"} {
				resp, err := http.Get(s.url + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 503 {
					t.Fatalf("%s: %d, want 503", path, resp.StatusCode)
				}
			}
		})
	}
}

// noRedirect shows a redirect instead of following it.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestAuthorizeRedirect: the browser goes to the provider's configured
// endpoint with the same query, plus connector_id when the client named no
// source; nothing in the request chooses the target.
func TestAuthorizeRedirect(t *testing.T) {
	p := newProvider(t)
	withQuery := newProvider(t)
	withQuery.set(200, func(iss string) string {
		return strings.Replace(standardDoc(iss), iss+"/oauth/authorize", iss+"/oauth/authorize?tenant=a", 1)
	})
	const source = "https://registry.pdpp.dev/connectors/loom"
	added := "&connector_id=" + url.QueryEscape(source)
	base := "response_type=code&client_id=cli_1&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&state=s&code_challenge=abc&code_challenge_method=S256&resource=http%3A%2F%2Fmcp.example%2Fmcp"
	details := url.QueryEscape(`[{"type":"https://pdpp.dev/data-access","source":{"kind":"connector","id":"https://registry.pdpp.dev/connectors/notes"}}]`)
	cases := []struct {
		name     string
		provider *provider
		query    string
		want     string // query of the Location, after the provider's endpoint
	}{
		{"no source named", p, base, base + added},
		{"connector_id passes unchanged", p, base + "&connector_id=notes", base + "&connector_id=notes"},
		{"authorization_details pass unchanged", p, base + "&authorization_details=" + details, base + "&authorization_details=" + details},
		{"pushed request passes unchanged", p, "client_id=cli_1&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Ax", "client_id=cli_1&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Ax"},
		{"target-like parameters are only passed on", p, base + "&authorization_endpoint=https%3A%2F%2Fevil.example&redirect=https%3A%2F%2Fevil.example", base + "&authorization_endpoint=https%3A%2F%2Fevil.example&redirect=https%3A%2F%2Fevil.example" + added},
		{"provider endpoint query kept first", withQuery, base, "tenant=a&" + base + added},
		{"empty query", p, "", added[1:]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, oauthfacade.Config{Issuer: issuerOf(tc.provider), Source: source}, "")
			u := s.url + oauthfacade.PathAuthorize
			if tc.query != "" {
				u += "?" + tc.query
			}
			resp, err := noRedirect.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := tc.provider.srv.URL + "/oauth/authorize?" + tc.want
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
				t.Fatalf("%d Location\n %q\nwant\n %q", resp.StatusCode, resp.Header.Get("Location"), want)
			}
			if resp.Header.Get("Cache-Control") != "no-store" {
				t.Fatal("a redirect carrying a client's request must not be cached")
			}
		})
	}

	s := serve(t, oauthfacade.Config{Issuer: issuerOf(p), Source: source}, "")
	refusals := []struct {
		name   string
		method string
		query  string
		status int
	}{
		{"query over the bound", http.MethodGet, "state=" + strings.Repeat("s", oauthfacade.MaxQueryBytes), http.StatusRequestURITooLong},
		{"malformed query", http.MethodGet, "state=%zz", http.StatusBadRequest},
		{"POST", http.MethodPost, base, http.StatusMethodNotAllowed},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, s.url+oauthfacade.PathAuthorize+"?"+tc.query, nil)
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get("Location") != "" {
				t.Fatalf("%d (Location %q), want %d and no redirect", resp.StatusCode, resp.Header.Get("Location"), tc.status)
			}
		})
	}
	t.Run("Host not served", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, s.url+oauthfacade.PathAuthorize+"?"+base, nil)
		req.Host = "evil.example"
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Fatalf("%d, want 421", resp.StatusCode)
		}
	})
}

// TestCheckSource: --oauth-source is a connector id or an http(s) URL.
func TestCheckSource(t *testing.T) {
	for _, tc := range []struct {
		source string
		ok     bool
	}{
		{"loom", true},
		{"https://registry.pdpp.dev/connectors/loom", true},
		{"urn:pdpp:loom", true},
		{"", false},
		{"lo om", false},
		{"loom&scope=all", false},
		{"javascript://x", false},
		{"https://user@registry.example/x", false},
		{strings.Repeat("a", 600), false},
	} {
		if err := oauthfacade.CheckSource(tc.source); (err == nil) != tc.ok {
			t.Errorf("CheckSource(%q) = %v, want ok=%v", tc.source, err, tc.ok)
		}
	}
}

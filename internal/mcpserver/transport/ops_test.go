package transport

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

func TestProtectedResourceMetadata(t *testing.T) {
	var fetches atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-protected-resource" || r.Header.Get("Authorization") != "" {
			http.NotFound(w, r)
			return
		}
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"resource":"http://rs.example","authorization_servers":["http://as.example:7662"],"bearer_methods_supported":["header"]}`)
	}))
	t.Cleanup(provider.Close)
	fromProvider, err := ProviderAuthorizationServers(provider.Client(), provider.URL, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	failing := func(context.Context) ([]string, error) { return nil, errors.New("provider down") }

	tests := []struct {
		name         string
		cfg          HTTPConfig
		path         string
		wantStatus   int
		wantResource string // "" means derived from the test server URL
		wantIssuers  []string
	}{
		{"static issuers, /mcp path", HTTPConfig{RequireBearer: true, AuthorizationServers: []string{"https://as.example"}},
			"/.well-known/oauth-protected-resource/mcp", http.StatusOK, "", []string{"https://as.example"}},
		{"static issuers, root path", HTTPConfig{RequireBearer: true, AuthorizationServers: []string{"https://as.example"}},
			"/.well-known/oauth-protected-resource", http.StatusOK, "", []string{"https://as.example"}},
		{"issuers from the provider", HTTPConfig{RequireBearer: true, AuthorizationServersFunc: fromProvider},
			"/.well-known/oauth-protected-resource/mcp", http.StatusOK, "", []string{"http://as.example:7662"}},
		{"public base URL", HTTPConfig{RequireBearer: true, PublicBaseURL: "https://mcp.example", AuthorizationServers: []string{"https://as.example"}},
			"/.well-known/oauth-protected-resource/mcp", http.StatusOK, "https://mcp.example/mcp", []string{"https://as.example"}},
		{"provider unavailable", HTTPConfig{RequireBearer: true, AuthorizationServersFunc: failing},
			"/.well-known/oauth-protected-resource/mcp", http.StatusServiceUnavailable, "", nil},
		{"not served without bearer auth", HTTPConfig{},
			"/.well-known/oauth-protected-resource/mcp", http.StatusNotFound, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newStack(t, tc.cfg, testTools{})
			resp, b := post(t, srv.URL+tc.path, http.MethodGet, "", nil)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, b)
			}
			if tc.wantStatus != http.StatusOK {
				return
			}
			var doc struct {
				Resource               string   `json:"resource"`
				AuthorizationServers   []string `json:"authorization_servers"`
				BearerMethodsSupported []string `json:"bearer_methods_supported"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			want := tc.wantResource
			if want == "" {
				want = srv.URL + "/mcp"
			}
			if doc.Resource != want || !slices.Equal(doc.AuthorizationServers, tc.wantIssuers) ||
				!slices.Equal(doc.BearerMethodsSupported, []string{"header"}) {
				t.Fatalf("document %s", b)
			}
			if resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			}
		})
	}
	// More documents served from the provider's metadata, still fetched once.
	again := newStack(t, HTTPConfig{RequireBearer: true, AuthorizationServersFunc: fromProvider}, testTools{})
	for range 3 {
		if resp, b := post(t, again.URL+"/.well-known/oauth-protected-resource", http.MethodGet, "", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("provider metadata fetched %d times, want 1 (cached)", n)
	}
}

func TestProviderAuthorizationServers(t *testing.T) {
	var answer atomic.Value
	answer.Store(`{"authorization_servers":["https://as.example"]}`)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-protected-resource/rs" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, answer.Load().(string))
	}))
	t.Cleanup(provider.Close)

	if _, err := ProviderAuthorizationServers(nil, "not a url", 0, nil); err == nil {
		t.Fatal("accepted a relative provider URL")
	}
	get, err := ProviderAuthorizationServers(provider.Client(), provider.URL+"/rs/", time.Nanosecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		answer string
		want   []string
		err    bool
	}{
		{"fresh", `{"authorization_servers":["https://as.example"]}`, []string{"https://as.example"}, false},
		{"refresh fails, stale answer kept", `{"authorization_servers":[]}`, []string{"https://as.example"}, false},
		{"refresh succeeds", `{"authorization_servers":["https://as2.example"]}`, []string{"https://as2.example"}, false},
		{"bad issuer kept out", `{"authorization_servers":["ftp://x"]}`, []string{"https://as2.example"}, false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			answer.Store(st.answer)
			time.Sleep(time.Millisecond)
			got, err := get(context.Background())
			if (err != nil) != st.err || !slices.Equal(got, st.want) {
				t.Fatalf("got %v, %v; want %v", got, err, st.want)
			}
		})
	}
	t.Run("no answer yet", func(t *testing.T) {
		fresh, _ := ProviderAuthorizationServers(provider.Client(), provider.URL+"/elsewhere", time.Hour, nil)
		if _, err := fresh(context.Background()); err == nil {
			t.Fatal("no error for a missing document")
		}
	})
}

func TestHealthAndReady(t *testing.T) {
	var readyCalls atomic.Int32
	var readyErr atomic.Value
	readyErr.Store("")
	check := func(ctx context.Context) error {
		readyCalls.Add(1)
		if msg := readyErr.Load().(string); msg != "" {
			return errors.New(msg)
		}
		return nil
	}
	srv := newStack(t, HTTPConfig{ReadyCheck: check}, testTools{})

	steps := []struct {
		name       string
		method     string
		path       string
		readyErr   string
		wantStatus int
		wantCalls  int32
	}{
		{"healthz", http.MethodGet, "/healthz", "down", http.StatusOK, 0},
		{"healthz HEAD", http.MethodHead, "/healthz", "down", http.StatusOK, 0},
		{"healthz POST", http.MethodPost, "/healthz", "", http.StatusMethodNotAllowed, 0},
		{"readyz ok", http.MethodGet, "/readyz", "", http.StatusOK, 1},
		{"readyz failing", http.MethodGet, "/readyz", "rs unreachable", http.StatusServiceUnavailable, 2},
		{"unknown path", http.MethodGet, "/nothing", "", http.StatusNotFound, 2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			readyErr.Store(st.readyErr)
			resp, b := post(t, srv.URL+st.path, st.method, "", nil)
			if resp.StatusCode != st.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, st.wantStatus, b)
			}
			if n := readyCalls.Load(); n != st.wantCalls {
				t.Fatalf("ready check called %d times, want %d", n, st.wantCalls)
			}
		})
	}
}

func TestHTTPReadyCheck(t *testing.T) {
	statuses := map[string]int{"/ok": 200, "/missing": 404, "/auth": 401, "/broken": 503}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(statuses[r.URL.Path])
	}))
	t.Cleanup(up.Close)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	tests := []struct {
		target  string
		wantErr bool
	}{
		{up.URL + "/ok", false},
		{up.URL + "/missing", false},
		{up.URL + "/auth", false},
		{up.URL + "/broken", true},
		{downURL, true},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			err := HTTPReadyCheck(up.Client(), tc.target)(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestAccessLogKeepsSecretsOut(t *testing.T) {
	var logs testkit.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rs := newTestRS(t, "tok-SECRET-1234")
	srv := newStack(t, HTTPConfig{RequireBearer: true, Logger: logger}, testTools{rsURL: rs.URL})

	requests := []struct {
		name   string
		body   string
		header http.Header
	}{
		{"good call", callBody(1, "echo", map[string]any{"text": "BODY-MARKER-5678"}), hdr("Authorization", "Bearer tok-SECRET-1234")},
		{"rs call", callBody(2, "rs_call", nil), hdr("Authorization", "Bearer tok-SECRET-1234")},
		{"rejected token", callBody(3, "echo", map[string]any{"text": "BODY-MARKER-5678"}), hdr("Authorization", "Basic tok-SECRET-1234")},
		{"rejected version", callBody(4, "echo", map[string]any{"text": "BODY-MARKER-5678"}),
			hdr("Authorization", "Bearer tok-SECRET-1234", "MCP-Protocol-Version", "2024-11-05")},
	}
	for _, rq := range requests {
		post(t, srv.URL+"/mcp", http.MethodPost, rq.body, rq.header)
	}
	// Observe writes a request's access line after the handler returns,
	// which may be after the client has read the reply: wait for all four.
	out := logs.WaitCount(`"msg":"http request"`, len(requests), testkit.Patience)
	for _, secret := range []string{"tok-SECRET-1234", "BODY-MARKER-5678"} {
		if strings.Contains(out, secret) {
			t.Fatalf("log contains %q:\n%s", secret, out)
		}
	}
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if m["msg"] == "http request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != len(requests) {
		t.Fatalf("%d access lines for %d requests:\n%s", len(lines), len(requests), out)
	}
	// Each line is written after its reply, and the next request may come
	// on a new connection before that: compare the statuses as a set.
	var statuses []float64
	for i, m := range lines {
		if m["path"] != "/mcp" || m["rpc_method"] != "tools/call" {
			t.Errorf("line %d: %v", i, m)
		}
		status, _ := m["status"].(float64)
		statuses = append(statuses, status)
	}
	slices.Sort(statuses)
	if want := []float64{200, 200, 400, 401}; !slices.Equal(statuses, want) {
		t.Errorf("access line statuses %v, want %v (in any order)", statuses, want)
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     HTTPConfig
		wantErr string
	}{
		{"defaults", HTTPConfig{}, ""},
		{"full", HTTPConfig{Listen: "0.0.0.0:9000", PublicBaseURL: "https://mcp.example/base", AllowedOrigins: []string{"https://a.example", " "},
			CORS: true, MaxBodyBytes: 4096, RequireBearer: true, AuthorizationServers: []string{"https://as.example"},
			ProtocolVersions: []string{"2025-06-18"}}, ""},
		{"bad listen", HTTPConfig{Listen: "8787"}, "listen"},
		{"negative body limit", HTTPConfig{MaxBodyBytes: -1}, "max body"},
		{"origin with path", HTTPConfig{AllowedOrigins: []string{"https://a.example/app"}}, "allowed origin"},
		{"origin without scheme", HTTPConfig{AllowedOrigins: []string{"a.example"}}, "allowed origin"},
		{"CORS without origins", HTTPConfig{CORS: true}, "CORS"},
		{"relative public base", HTTPConfig{PublicBaseURL: "/mcp"}, "public base"},
		{"public base with query", HTTPConfig{PublicBaseURL: "https://a.example/?x=1"}, "public base"},
		{"old protocol version", HTTPConfig{ProtocolVersions: []string{"2024-11-05"}}, "protocol version"},
		{"unknown protocol version", HTTPConfig{ProtocolVersions: []string{"2030-01-01"}}, "protocol version"},
		{"relative issuer", HTTPConfig{AuthorizationServers: []string{"as.example"}}, "authorization server"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.Effective()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one about %q", err, tc.wantErr)
			}
		})
	}
}

func TestCanonicalOrigin(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://A.Example", "https://a.example:443"},
		{"https://a.example:443", "https://a.example:443"},
		{"HTTP://a.example", "http://a.example:80"},
		{"http://a.example:8080/", "http://a.example:8080"},
		{"http://[::1]:5173", "http://[::1]:5173"},
		{"null", ""},
		{"https://user@a.example", ""},
		{"ws://a.example", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := canonicalOrigin(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("accepted %q as %q", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestIsLoopbackListen(t *testing.T) {
	tests := map[string]bool{
		"127.0.0.1:8787": true, "localhost:1": true, "[::1]:0": true, "127.1.2.3:9": true,
		":8787": false, "0.0.0.0:8787": false, "[::]:1": false, "192.0.2.10:80": false, "mcp.example:443": false,
	}
	for addr, want := range tests {
		t.Run(addr, func(t *testing.T) {
			if got := isLoopbackListen(addr); got != want {
				t.Fatalf("isLoopbackListen(%q) = %v", addr, got)
			}
		})
	}
}

func TestServeHTTPWarnings(t *testing.T) {
	tests := []struct {
		name     string
		cfg      HTTPConfig
		wantWarn []string
	}{
		{"loopback", HTTPConfig{Listen: "127.0.0.1:0"}, nil},
		{"all interfaces, nothing set", HTTPConfig{Listen: "0.0.0.0:0"}, []string{"Origin allowlist", "public base URL"}},
		{"all interfaces, configured", HTTPConfig{Listen: "0.0.0.0:0", AllowedOrigins: []string{"https://a.example"},
			PublicBaseURL: "https://mcp.example"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.Buffer
			tc.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			ctx, cancel := context.WithCancel(context.Background())
			tc.cfg.OnListen = func(net.Addr) { cancel() }
			if err := ServeHTTP(ctx, http.NotFoundHandler(), tc.cfg); err != nil {
				t.Fatal(err)
			}
			var warns []string
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "level=WARN") {
					warns = append(warns, line)
				}
			}
			if len(warns) != len(tc.wantWarn) {
				t.Fatalf("warnings %q, want %d", warns, len(tc.wantWarn))
			}
			for i, w := range tc.wantWarn {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %q lacks %q", warns[i], w)
				}
			}
		})
	}
}

func TestServeHTTPListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = ServeHTTP(context.Background(), http.NotFoundHandler(), HTTPConfig{Listen: ln.Addr().String(), Logger: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("error %v", err)
	}
}

// TestHTTPReadyCheckSharesUpstreamRequests floods the ready check: 200
// concurrent probes make one upstream request, probes within readyReuse
// reuse its outcome, and a probe that gives up does not fail the others.
func TestHTTPReadyCheckSharesUpstreamRequests(t *testing.T) {
	var hits atomic.Int64
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-release
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(up.Close)
	check := HTTPReadyCheck(up.Client(), up.URL)

	gaveUp, cancel := context.WithCancel(context.Background())
	cancel()
	if err := check(gaveUp); !errors.Is(err, context.Canceled) {
		t.Fatalf("a probe that gave up: %v", err)
	}
	errs := make(chan error, 200)
	for range 200 {
		go func() { errs <- check(context.Background()) }()
	}
	if !testkit.Eventually(testkit.Patience, func() bool { return hits.Load() == 1 }) {
		t.Fatal("the upstream request never arrived")
	}
	close(release)
	for range 200 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "503") {
			t.Fatalf("probe outcome %v, want the upstream 503", err)
		}
	}
	if err := check(context.Background()); err == nil {
		t.Fatal("a probe within the reuse window lost the outcome")
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d upstream requests for 202 probes, want 1", n)
	}
}

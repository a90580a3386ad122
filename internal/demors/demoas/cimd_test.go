package demoas_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/demoas"
)

// inspectorRedirect and inspectorRegistration are what MCP Inspector 2.12
// sends to a registration endpoint: an empty scope, two loopback redirect
// URIs, a public client and members this server does not use.
const inspectorRedirect = "http://localhost:6274/oauth/callback"

const inspectorRegistration = `{"redirect_uris":["http://localhost:6274/oauth/callback","http://localhost:6274/oauth/callback/debug"],` +
	`"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"],` +
	`"client_name":"MCP Inspector","client_uri":"https://github.com/modelcontextprotocol/inspector","scope":""}`

// newASWith is newAS with the configuration's document client.
func newASWith(t *testing.T, docClient *http.Client) *as {
	t.Helper()
	s, err := demoas.New(demoas.Config{Sources: sources, AutoConsent: true, DocumentClient: docClient})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &as{srv: s, url: hs.URL}
}

// codeFlow authorizes clientID for redirect (auto-consent) and exchanges the
// code, returning the token or failing.
func codeFlow(t *testing.T, a *as, clientID, redirect string) *oauth2.Token {
	t.Helper()
	cfg := &oauth2.Config{ClientID: clientID, RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{AuthURL: a.url + "/oauth/authorize", TokenURL: a.url + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	resp, err := noRedirect.Get(cfg.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", "http://127.0.0.1:8787/mcp"),
		oauth2.SetAuthURLParam("connector_id", "loom")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc.String(), redirect+"?") || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d to %q", resp.StatusCode, loc)
	}
	tok, err := cfg.Exchange(context.Background(), loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok
}

// TestInspectorRegistration: MCP Inspector's own registration is accepted
// and its client gets a client grant through the code flow and a refresh.
func TestInspectorRegistration(t *testing.T) {
	a := newASWith(t, nil)
	resp, err := http.Post(a.url+"/oauth/register", "application/json", strings.NewReader(inspectorRegistration))
	if err != nil {
		t.Fatal(err)
	}
	var reg map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || reg["client_id"] == nil {
		t.Fatalf("registration: %d %v", resp.StatusCode, reg)
	}
	tok := codeFlow(t, a, reg["client_id"].(string), inspectorRedirect)
	if g, st, ok := a.srv.Lookup(tok.AccessToken); !ok || st != demoas.Active || g.Kind != demoas.KindClient {
		t.Fatalf("lookup %+v %v %v", g, st, ok)
	}
}

// docServer serves client metadata documents over TLS on loopback and counts
// its requests; body is what each path answers.
type docServer struct {
	*httptest.Server
	hits atomic.Int64
}

func newDocServer(t *testing.T, body func(self, path string) (int, string)) *docServer {
	t.Helper()
	d := &docServer{}
	d.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.hits.Add(1)
		if r.URL.Path == "/moved.json" {
			http.Redirect(w, r, "/client.json", http.StatusFound)
			return
		}
		status, b := body(d.URL+r.URL.Path, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(b))
	}))
	t.Cleanup(d.Close)
	return d
}

// TestClientMetadataDocument: an https client_id is fetched once (within
// DocumentTTL) and its client completes the flow; a document that is not
// its own, too large, redirected, missing, secret-bearing or asking for
// what this server cannot honour is refused on the server's own page.
func TestClientMetadataDocument(t *testing.T) {
	doc := func(self, redirect string, extra string) string {
		return `{"client_id":"` + self + `","client_name":"Doc client","redirect_uris":["` + redirect + `"],` +
			`"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]` + extra + `}`
	}
	d := newDocServer(t, func(self, path string) (int, string) {
		switch path {
		case "/client.json":
			return 200, doc(self, redirectURI, `,"scope":""`)
		case "/other.json":
			return 200, doc("https://elsewhere.example/client.json", redirectURI, "")
		case "/large.json":
			return 200, doc(self, redirectURI, `,"logo_uri":"https://x.example/`+strings.Repeat("a", demoas.MaxDocumentBytes)+`"`)
		case "/secret.json":
			return 200, doc(self, redirectURI, `,"client_secret":"s"`)
		case "/confidential.json":
			return 200, strings.Replace(doc(self, redirectURI, ""), `"none"`, `"private_key_jwt"`, 1)
		case "/scoped.json":
			return 200, doc(self, redirectURI, `,"scope":"read"`)
		case "/http-redirect.json":
			return 200, doc(self, "http://app.example/cb", "")
		case "/not-json.json":
			return 200, "<html>"
		}
		return 404, `{}`
	})
	a := newASWith(t, d.Client())

	t.Run("the whole flow, one fetch", func(t *testing.T) {
		before := d.hits.Load()
		id := d.URL + "/client.json"
		tok := codeFlow(t, a, id, redirectURI)
		g, st, ok := a.srv.Lookup(tok.AccessToken)
		if !ok || st != demoas.Active || g.ClientID != id {
			t.Fatalf("lookup %+v %v %v", g, st, ok)
		}
		codeFlow(t, a, id, redirectURI)
		if n := d.hits.Load() - before; n != 1 {
			t.Fatalf("%d fetches for two flows, want 1 (cached)", n)
		}
	})

	for _, path := range []string{"/other.json", "/large.json", "/secret.json", "/confidential.json", "/scoped.json",
		"/http-redirect.json", "/not-json.json", "/missing.json", "/moved.json"} {
		t.Run("refused "+path, func(t *testing.T) {
			cfg := a.oauth(d.URL + path)
			resp := authorize(t, cfg, oauth2.GenerateVerifier(), nil)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
				t.Fatalf("status %d Location %q: want the server's own error page", resp.StatusCode, resp.Header.Get("Location"))
			}
			code, _ := tokenPost(t, a, url.Values{"grant_type": {"authorization_code"}, "client_id": {d.URL + path}, "code": {"x"}})
			if code != http.StatusUnauthorized {
				t.Fatalf("token endpoint answered %d for a refused document, want 401", code)
			}
		})
	}
}

// TestClientMetadataDocumentAddresses: without a test's document client, a
// client_id URL must be https with a path on a public host; nothing else is
// fetched.
func TestClientMetadataDocumentAddresses(t *testing.T) {
	d := newDocServer(t, func(self, path string) (int, string) { return 200, `{}` })
	a := newASWith(t, nil)
	u, _ := url.Parse(d.URL)
	for _, id := range []string{
		d.URL + "/client.json",                   // loopback address
		"https://localhost:" + u.Port() + "/c",   // loopback name
		"https://10.0.0.7/client.json",           // private
		"https://169.254.169.254/latest",         // link-local metadata
		"https://metadata.google.internal/c",     // reserved suffix
		"https://intranet/client.json",           // single label
		"https://[::ffff:127.0.0.1]/client.json", // IPv4-mapped loopback
		"https://[::ffff:0:7f00:1]/client.json",  // IPv4-translated loopback
		"https://168.63.129.16/client.json",      // cloud wire server
		"https://app.example",                    // no path
		"https://app.example/a/../client.json",   // dot segment
		"https://user@app.example/client.json",   // user information
	} {
		t.Run(id, func(t *testing.T) {
			resp := authorize(t, a.oauth(id), oauth2.GenerateVerifier(), nil)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
				t.Fatalf("status %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
			}
		})
	}
	if n := d.hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the document server", n)
	}
}

// TestClientMetadataDocumentFetchedOnce: concurrent first uses of one
// client_id share one fetch.
func TestClientMetadataDocumentFetchedOnce(t *testing.T) {
	release := make(chan struct{})
	d := newDocServer(t, func(self, path string) (int, string) {
		<-release
		return 200, `{"client_id":"` + self + `","redirect_uris":["` + redirectURI + `"]}`
	})
	a := newASWith(t, d.Client())
	const n = 8
	done := make(chan int, n)
	for range n {
		go func() {
			resp, err := noRedirect.Get(a.oauth(d.URL+"/client.json").AuthCodeURL("st-1", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	// Let every request reach the server before the document is served.
	time.Sleep(200 * time.Millisecond)
	close(release)
	for range n {
		if code := <-done; code != http.StatusFound {
			t.Fatalf("authorize: %d, want a redirect with a code", code)
		}
	}
	if got := d.hits.Load(); got != 1 {
		t.Fatalf("%d fetches for %d concurrent first uses, want 1", got, n)
	}
}

package demoas_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/demoas"
)

var sources = []demoas.Source{
	{ID: "loom", URL: "https://registry.pdpp.dev/connectors/loom", Name: "Loom"},
	{ID: "notes", URL: "https://registry.pdpp.dev/connectors/notes", Name: "Notes"},
}

const redirectURI = "http://127.0.0.1:9/callback"

// as is one authorization server under httptest, with a clock the test moves.
type as struct {
	srv *demoas.Server
	url string
	mu  sync.Mutex
	now time.Time
}

func newAS(t *testing.T, autoConsent bool) *as {
	t.Helper()
	s, err := demoas.New(demoas.Config{Sources: sources, AutoConsent: autoConsent, AccessTokenTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a := &as{srv: s, now: time.Now()}
	demoas.SetClock(s, func() time.Time { a.mu.Lock(); defer a.mu.Unlock(); return a.now })
	mux := http.NewServeMux()
	s.Register(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	a.url = hs.URL
	return a
}

func (a *as) advance(d time.Duration) { a.mu.Lock(); a.now = a.now.Add(d); a.mu.Unlock() }

// noRedirect is a client that shows each redirect instead of following it, as a
// test of what the browser would be told.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// register registers a public client the way the go-sdk's DCR helper does.
func (a *as) register(t *testing.T) string {
	t.Helper()
	resp, err := oauthex.RegisterClient(context.Background(), a.url+"/oauth/register", &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirectURI}, TokenEndpointAuthMethod: "none", ClientName: "test client",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}, http.DefaultClient)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	return resp.ClientID
}

func (a *as) oauth(clientID string) *oauth2.Config {
	return &oauth2.Config{ClientID: clientID, RedirectURL: redirectURI,
		Endpoint: oauth2.Endpoint{AuthURL: a.url + "/oauth/authorize", TokenURL: a.url + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
}

// authorize sends the browser to the authorization endpoint with PKCE and extra
// parameters and returns the answer, unfollowed.
func authorize(t *testing.T, cfg *oauth2.Config, verifier string, extra url.Values) *http.Response {
	t.Helper()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	for k := range extra {
		opts = append(opts, oauth2.SetAuthURLParam(k, extra.Get(k)))
	}
	resp, err := noRedirect.Get(cfg.AuthCodeURL("st-1", opts...))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// codeFrom reads the code (or the error) from a redirect back to the client.
func codeFrom(t *testing.T, resp *http.Response) (code string, q url.Values) {
	t.Helper()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("status %d, want a redirect to the client", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), redirectURI+"?") {
		t.Fatalf("redirected to %q, want %s", resp.Header.Get("Location"), redirectURI)
	}
	q = loc.Query()
	if q.Get("state") != "st-1" {
		t.Fatalf("state %q not echoed", q.Get("state"))
	}
	return q.Get("code"), q
}

// login runs the whole code flow with auto-consent and returns the token.
func (a *as) login(t *testing.T, extra url.Values) (*oauth2.Config, *oauth2.Token) {
	t.Helper()
	cfg := a.oauth(a.register(t))
	verifier := oauth2.GenerateVerifier()
	code, q := codeFrom(t, authorize(t, cfg, verifier, extra))
	if code == "" {
		t.Fatalf("no code: %v", q)
	}
	tok, err := cfg.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return cfg, tok
}

func getJSON(t *testing.T, u string) map[string]any {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMetadata: the RFC 8414 document names this server as issuer, S256 only,
// public clients only and no scopes, and passes the go-sdk client's checks.
func TestMetadata(t *testing.T) {
	a := newAS(t, true)
	m := getJSON(t, a.url+"/.well-known/oauth-authorization-server")
	want := map[string]any{
		"issuer":                                     a.url,
		"authorization_endpoint":                     a.url + "/oauth/authorize",
		"token_endpoint":                             a.url + "/oauth/token",
		"registration_endpoint":                      a.url + "/oauth/register",
		"code_challenge_methods_supported":           []any{"S256"},
		"token_endpoint_auth_methods_supported":      []any{"none"},
		"pdpp_authorization_details_types_supported": []any{demoas.DataAccessType},
		"client_id_metadata_document_supported":      true,
	}
	for k, v := range want {
		got, _ := json.Marshal(m[k])
		exp, _ := json.Marshal(v)
		if !bytes.Equal(got, exp) {
			t.Errorf("%s = %s, want %s", k, got, exp)
		}
	}
	if _, ok := m["scopes_supported"]; ok {
		t.Error("scopes_supported must not be published")
	}
	asm, err := oauthex.GetAuthServerMeta(context.Background(), a.url+"/.well-known/oauth-authorization-server", a.url, http.DefaultClient)
	if err != nil || asm == nil {
		t.Fatalf("go-sdk metadata check: %v", err)
	}
}

// TestRegister: DCR accepts public clients and refuses what the reference
// authorization server refuses, each with an RFC 7591 error.
func TestRegister(t *testing.T) {
	a := newAS(t, true)
	cases := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"public client", `{"redirect_uris":["` + redirectURI + `"],"token_endpoint_auth_method":"none"}`, 201, ""},
		{"auth method left out", `{"redirect_uris":["https://app.example/cb"]}`, 201, ""},
		{"native app scheme", `{"redirect_uris":["com.example.app:/cb"]}`, 201, ""},
		{"empty scope (MCP Inspector)", `{"redirect_uris":["` + redirectURI + `"],"scope":""}`, 201, ""},
		{"a scope", `{"redirect_uris":["` + redirectURI + `"],"scope":"read"}`, 400, "invalid_client_metadata"},
		{"scope not a string", `{"redirect_uris":["` + redirectURI + `"],"scope":[]}`, 400, "invalid_client_metadata"},
		{"members this server does not use", `{"redirect_uris":["` + redirectURI + `"],"software_id":"x","software_version":"1","client_uri":"https://app.example","logo_uri":"https://app.example/l.png","contacts":["a@app.example"],"x_vendor":{"n":1}}`, 201, ""},
		{"client_secret_post", `{"redirect_uris":["` + redirectURI + `"],"token_endpoint_auth_method":"client_secret_post"}`, 400, "invalid_client_metadata"},
		{"client_secret_basic", `{"redirect_uris":["` + redirectURI + `"],"token_endpoint_auth_method":"client_secret_basic"}`, 400, "invalid_client_metadata"},
		{"no redirect URIs", `{"client_name":"x"}`, 400, "invalid_redirect_uri"},
		{"http beyond loopback", `{"redirect_uris":["http://app.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"javascript", `{"redirect_uris":["javascript:alert(1)"]}`, 400, "invalid_redirect_uri"},
		{"fragment", `{"redirect_uris":["https://app.example/cb#x"]}`, 400, "invalid_redirect_uri"},
		{"relative", `{"redirect_uris":["/cb"]}`, 400, "invalid_redirect_uri"},
		{"too many redirect URIs", `{"redirect_uris":["https://a.example/1","https://a.example/2","https://a.example/3","https://a.example/4","https://a.example/5","https://a.example/6","https://a.example/7","https://a.example/8","https://a.example/9"]}`, 400, "invalid_redirect_uri"},
		{"implicit grant", `{"redirect_uris":["` + redirectURI + `"],"grant_types":["implicit"]}`, 400, "invalid_client_metadata"},
		{"not an object", `["x"]`, 400, "invalid_client_metadata"},
		{"body over the bound", `{"redirect_uris":["` + redirectURI + `"],"client_name":"` + strings.Repeat("x", 40<<10) + `"}`, 400, "invalid_client_metadata"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(a.url+"/oauth/register", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&m)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %v", resp.StatusCode, tc.status, m)
			}
			if tc.code != "" && m["error"] != tc.code {
				t.Fatalf("error %v, want %s", m["error"], tc.code)
			}
			if tc.code == "" && (m["client_id"] == "" || m["token_endpoint_auth_method"] != "none") {
				t.Fatalf("registration answer %v", m)
			}
		})
	}
}

// TestGrantKinds: connector_id (by id or registry URL) or PDPP
// authorization_details give a client grant over one source; neither gives a
// package grant over every source (auto-consent).
func TestGrantKinds(t *testing.T) {
	details := `[{"type":"` + demoas.DataAccessType + `","source":{"kind":"connector","id":"https://registry.pdpp.dev/connectors/notes"},` +
		`"purpose_code":"https://pdpp.dev/purpose/personal_ai_assistant","access_mode":"continuous","streams":[{"name":"*"}]}]`
	cases := []struct {
		name    string
		extra   url.Values
		kind    demoas.Kind
		member  string
		sources []string
	}{
		{"connector id", url.Values{"connector_id": {"loom"}}, demoas.KindClient, "grant_id", []string{"loom"}},
		{"connector URL", url.Values{"connector_id": {"https://registry.pdpp.dev/connectors/loom"}}, demoas.KindClient, "grant_id", []string{"loom"}},
		{"authorization_details", url.Values{"authorization_details": {details}}, demoas.KindClient, "grant_id", []string{"notes"}},
		{"both, agreeing", url.Values{"authorization_details": {details}, "connector_id": {"notes"}}, demoas.KindClient, "grant_id", []string{"notes"}},
		{"neither", nil, demoas.KindPackage, "grant_package_id", []string{"loom", "notes"}},
	}
	a := newAS(t, true)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, tok := a.login(t, tc.extra)
			id, _ := tok.Extra(tc.member).(string)
			if id == "" {
				t.Fatalf("token response lacks %s", tc.member)
			}
			for _, other := range []string{"grant_id", "grant_package_id"} {
				if other != tc.member && tok.Extra(other) != nil {
					t.Fatalf("token response carries %s too", other)
				}
			}
			if tok.RefreshToken == "" || tok.Expiry.IsZero() {
				t.Fatalf("want a refresh token and an expiry: %+v", tok)
			}
			g, st, ok := a.srv.Lookup(tok.AccessToken)
			if !ok || st != demoas.Active || g.Kind != tc.kind || g.ID != id || strings.Join(g.Sources, ",") != strings.Join(tc.sources, ",") {
				t.Fatalf("lookup: %+v state %v ok %v", g, st, ok)
			}
		})
	}
}

// TestAuthorizeRefusals: before the client and redirect URI are known good the
// person sees an error page and is sent nowhere; after, the client gets the
// error at its redirect URI.
func TestAuthorizeRefusals(t *testing.T) {
	a := newAS(t, true)
	clientID := a.register(t)
	good := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI}, "state": {"st-1"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}}
	with := func(k, v string) url.Values {
		q := url.Values{}
		for kk, vv := range good {
			q[kk] = vv
		}
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
		return q
	}
	cases := []struct {
		name   string
		query  string
		status int
		error  string // at the redirect URI; "" for a page
	}{
		{"unknown client", with("client_id", "cli_nobody").Encode(), 400, ""},
		{"unregistered redirect URI", with("redirect_uri", "https://evil.example/cb").Encode(), 400, ""},
		{"repeated parameter", good.Encode() + "&client_id=" + clientID, 400, ""},
		{"query over the bound", with("state", strings.Repeat("s", 9<<10)).Encode(), 414, ""},
		{"no PKCE", with("code_challenge_method", "").Encode(), 302, "invalid_request"},
		{"plain PKCE", with("code_challenge_method", "plain").Encode(), 302, "invalid_request"},
		{"short challenge", with("code_challenge", "abc").Encode(), 302, "invalid_request"},
		{"implicit", with("response_type", "token").Encode(), 302, "unsupported_response_type"},
		{"unknown connector", with("connector_id", "mail").Encode(), 302, "invalid_request"},
		{"other details type", with("authorization_details", `[{"type":"payment","source":{"kind":"connector","id":"loom"}}]`).Encode(), 302, "invalid_authorization_details"},
		{"details over two sources", with("authorization_details", `[{"type":"`+demoas.DataAccessType+`","source":{"kind":"connector","id":"loom"}},{"type":"`+demoas.DataAccessType+`","source":{"kind":"connector","id":"notes"}}]`).Encode(), 302, "invalid_authorization_details"},
		{"details not JSON", with("authorization_details", "loom").Encode(), 302, "invalid_authorization_details"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := noRedirect.Get(a.url + "/oauth/authorize?" + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.error == "" {
				if loc := resp.Header.Get("Location"); loc != "" {
					t.Fatalf("an error page must not redirect (Location %q)", loc)
				}
				return
			}
			_, q := codeFrom(t, resp)
			if q.Get("error") != tc.error || q.Has("code") {
				t.Fatalf("redirect query %v, want error %s", q, tc.error)
			}
		})
	}
}

// tokenPost posts a token request form and returns status and OAuth error.
func tokenPost(t *testing.T, a *as, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(a.url+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m.Error
}

// TestCodeExchangeRefusals: the code is bound to its client, redirect URI and
// PKCE verifier, and a second use revokes the grant the first use produced.
func TestCodeExchangeRefusals(t *testing.T) {
	a := newAS(t, true)
	cfg := a.oauth(a.register(t))
	verifier := oauth2.GenerateVerifier()
	code, _ := codeFrom(t, authorize(t, cfg, verifier, url.Values{"connector_id": {"loom"}}))
	base := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {cfg.ClientID},
		"redirect_uri": {redirectURI}, "code_verifier": {verifier}}
	with := func(k, v string) url.Values {
		q := url.Values{}
		for kk, vv := range base {
			q[kk] = vv
		}
		q.Set(k, v)
		return q
	}
	other := a.register(t)
	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"wrong verifier", with("code_verifier", oauth2.GenerateVerifier()), 400, "invalid_grant"},
		{"malformed verifier", with("code_verifier", "short"), 400, "invalid_request"},
		{"another client", with("client_id", other), 400, "invalid_grant"},
		{"unknown client", with("client_id", "cli_nobody"), 401, "invalid_client"},
		{"other redirect URI", with("redirect_uri", "http://127.0.0.1:9/other"), 400, "invalid_grant"},
		{"unknown code", with("code", "pdppas_code_nothing"), 400, "invalid_grant"},
		{"password grant", with("grant_type", "password"), 400, "unsupported_grant_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code := tokenPost(t, a, tc.form)
			if status != tc.status || code != tc.code {
				t.Fatalf("got %d %s, want %d %s", status, code, tc.status, tc.code)
			}
		})
	}
	tok, err := cfg.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("the refusals must not have spent the code: %v", err)
	}
	if status, code := tokenPost(t, a, base); status != 400 || code != "invalid_grant" {
		t.Fatalf("replayed code: %d %s", status, code)
	}
	if _, st, _ := a.srv.Lookup(tok.AccessToken); st != demoas.Revoked {
		t.Fatalf("a replayed code must revoke its grant; state %v", st)
	}
	t.Run("code past its lifetime", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code, _ := codeFrom(t, authorize(t, cfg, verifier, url.Values{"connector_id": {"loom"}}))
		a.advance(demoas.CodeTTL + time.Second)
		if _, err := cfg.Exchange(context.Background(), code, oauth2.VerifierOption(verifier)); !isOAuthError(err, "invalid_grant") {
			t.Fatalf("expired code: %v", err)
		}
	})
}

func isOAuthError(err error, code string) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == code
}

// refresh forces a refresh with rt through the oauth2 package.
func refresh(cfg *oauth2.Config, rt string) (*oauth2.Token, error) {
	return cfg.TokenSource(context.Background(), &oauth2.Token{RefreshToken: rt, Expiry: time.Unix(1, 0)}).Token()
}

// TestLifecycle: an access token expires after its lifetime; refresh tokens
// rotate; a used refresh token presented again revokes the whole grant.
func TestLifecycle(t *testing.T) {
	a := newAS(t, true)
	cfg, t1 := a.login(t, url.Values{"connector_id": {"loom"}})
	grant := t1.Extra("grant_id")

	a.advance(11 * time.Second)
	if _, st, ok := a.srv.Lookup(t1.AccessToken); !ok || st != demoas.Expired {
		t.Fatalf("after its lifetime: state %v ok %v, want expired", st, ok)
	}
	t2, err := refresh(cfg, t1.RefreshToken)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if t2.RefreshToken == t1.RefreshToken || t2.AccessToken == t1.AccessToken || t2.Extra("grant_id") != grant {
		t.Fatalf("refresh must rotate both tokens within the same grant: %+v", t2)
	}
	if _, st, _ := a.srv.Lookup(t2.AccessToken); st != demoas.Active {
		t.Fatalf("refreshed token state %v", st)
	}

	if _, err := refresh(cfg, t1.RefreshToken); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("replayed refresh token: %v, want invalid_grant", err)
	}
	if _, st, _ := a.srv.Lookup(t2.AccessToken); st != demoas.Revoked {
		t.Fatalf("after a replay the family's live token is %v, want revoked", st)
	}
	if _, err := refresh(cfg, t2.RefreshToken); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("the family's current refresh token after a replay: %v, want invalid_grant", err)
	}
	if _, _, ok := a.srv.Lookup("pdppas_at_never_issued"); ok {
		t.Fatal("an unknown token must not resolve")
	}
}

// TestConsentPage: without auto-consent the person sees what is asked and
// answers once; the picker's choice is what a package grant covers.
func TestConsentPage(t *testing.T) {
	a := newAS(t, false)
	cfg := a.oauth(a.register(t))
	open := func(t *testing.T, connector string) (id, verifier, page string) {
		verifier = oauth2.GenerateVerifier()
		opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
		if connector != "" {
			opts = append(opts, oauth2.SetAuthURLParam("connector_id", connector))
		}
		resp, err := noRedirect.Get(cfg.AuthCodeURL("st-1", opts...))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Fatalf("consent page: %d %v", resp.StatusCode, resp.Header)
		}
		page = string(b)
		i := strings.Index(page, `name="request" value="`)
		if i < 0 {
			t.Fatalf("no request id in the page:\n%s", page)
		}
		rest := page[i+len(`name="request" value="`):]
		return rest[:strings.IndexByte(rest, '"')], verifier, page
	}
	answer := func(t *testing.T, form url.Values) *http.Response {
		resp, err := noRedirect.PostForm(a.url+"/oauth/consent", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	t.Run("one source, approved once", func(t *testing.T) {
		id, _, page := open(t, "loom")
		if !strings.Contains(page, "Loom") || !strings.Contains(page, "test client") || strings.Contains(page, `type="checkbox"`) {
			t.Fatalf("one-source page:\n%s", page)
		}
		code, _ := codeFrom(t, answer(t, url.Values{"request": {id}, "decision": {"approve"}}))
		if code == "" {
			t.Fatal("no code")
		}
		if resp := answer(t, url.Values{"request": {id}, "decision": {"approve"}}); resp.StatusCode != 400 {
			t.Fatalf("a consent answered twice: %d", resp.StatusCode)
		}
	})
	t.Run("denied", func(t *testing.T) {
		id, _, _ := open(t, "loom")
		_, q := codeFrom(t, answer(t, url.Values{"request": {id}, "decision": {"deny"}}))
		if q.Get("error") != "access_denied" {
			t.Fatalf("deny: %v", q)
		}
	})
	t.Run("picker", func(t *testing.T) {
		id, verifier, page := open(t, "")
		if strings.Count(page, `type="checkbox"`) != len(sources) {
			t.Fatalf("picker page:\n%s", page)
		}
		code, _ := codeFrom(t, answer(t, url.Values{"request": {id}, "decision": {"approve"}, "source": {"notes", "unknown"}}))
		tok, err := cfg.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		g, _, _ := a.srv.Lookup(tok.AccessToken)
		if g.Kind != demoas.KindPackage || strings.Join(g.Sources, ",") != "notes" || tok.Extra("grant_package_id") != g.ID {
			t.Fatalf("picked package grant: %+v", g)
		}
	})
	t.Run("unknown request", func(t *testing.T) {
		if resp := answer(t, url.Values{"request": {"req_nothing"}, "decision": {"approve"}}); resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
			t.Fatalf("unknown consent request: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
}

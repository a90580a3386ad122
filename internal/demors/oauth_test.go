package demors_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// newOAuthRS starts a demo RS that serves its authorization server too, with
// auto-consent and the given access token lifetime.
func newOAuthRS(t *testing.T, ttl time.Duration) *rs {
	t.Helper()
	s, err := demors.New(demors.Config{Tokens: testTokens, OAuth: &demors.OAuthConfig{AccessTokenTTL: ttl, AutoConsent: true}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); _ = s.Close() })
	return &rs{srv: s, http: ts}
}

// oauthLogin discovers the authorization server from the RS's metadata as a
// client does, registers, authorizes (auto-consent) with PKCE and extra
// parameters, and exchanges the code.
func oauthLogin(t *testing.T, r *rs, extra url.Values) (*oauth2.Config, *oauth2.Token) {
	t.Helper()
	ctx := context.Background()
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, r.http.URL+"/.well-known/oauth-protected-resource", r.http.URL, http.DefaultClient)
	if err != nil {
		t.Fatalf("resource metadata: %v", err)
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], http.DefaultClient)
	if err != nil || asm == nil {
		t.Fatalf("authorization server metadata at %v: %v", prm.AuthorizationServers, err)
	}
	const redirect = "http://127.0.0.1:9/callback"
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none"}, http.DefaultClient)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	cfg := &oauth2.Config{ClientID: reg.ClientID, RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	for k := range extra {
		opts = append(opts, oauth2.SetAuthURLParam(k, extra.Get(k)))
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(cfg.AuthCodeURL("s", opts...))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	tok, err := cfg.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	return cfg, tok
}

// TestOAuthGrantsAtTheRS: what the RS answers to each kind and state of token
// its authorization server issued, on the routes the adapter uses.
func TestOAuthGrantsAtTheRS(t *testing.T) {
	r := newOAuthRS(t, time.Second)
	routes := []string{"/v1/schema?view=compact", "/v1/schema", "/v1/streams", "/v1/search?q=zephyrmarker", "/v1/event-subscriptions"}

	t.Run("client grant reads its one source", func(t *testing.T) {
		_, tok := oauthLogin(t, r, url.Values{"connector_id": {"https://registry.pdpp.dev/connectors/notes"}})
		body := r.get(t, "/v1/schema?view=compact", tok.AccessToken).mustStatus(t, 200).body
		if str(at(body, "bearer", "token_kind")) != "client" || str(at(body, "bearer", "grant_id")) != tok.Extra("grant_id") {
			t.Fatalf("bearer: %v", body["bearer"])
		}
		var connectors []string
		for _, c := range list(body["connectors"]) {
			connectors = append(connectors, str(at(c, "connector_id")))
		}
		if strings.Join(connectors, ",") != "notes" {
			t.Fatalf("connectors %v, want notes only", connectors)
		}
		if got := r.get(t, "/v1/streams/transcripts/records?connection_id=cin_demo_loom_main", tok.AccessToken); got.status != 401 || got.errCode() == "context.active_false" {
			t.Fatalf("a connection of another source must be a scope refusal: %d %s", got.status, got.errCode())
		}
	})

	t.Run("package token is refused on every route", func(t *testing.T) {
		_, tok := oauthLogin(t, r, nil)
		if tok.Extra("grant_package_id") == nil {
			t.Fatalf("want a package token: %v", tok)
		}
		for _, route := range routes {
			got := r.get(t, route, tok.AccessToken).mustStatus(t, 404)
			if got.errCode() != "not_found" || str(got.errField("message")) != "Unknown source: unknown" {
				t.Fatalf("%s: %s", route, got.raw)
			}
		}
	})

	t.Run("expired then revoked", func(t *testing.T) {
		cfg, tok := oauthLogin(t, r, url.Values{"connector_id": {"loom"}})
		r.get(t, "/v1/schema", tok.AccessToken).mustStatus(t, 200)
		var got response
		if !testkit.Eventually(testkit.Patience, func() bool {
			got = r.get(t, "/v1/schema", tok.AccessToken)
			return got.status != 200
		}) {
			t.Fatal("the access token never expired")
		}
		for _, route := range routes {
			if got = r.get(t, route, tok.AccessToken); got.status != 403 || got.errCode() != "grant_expired" {
				t.Fatalf("%s with an expired token: %d %s", route, got.status, got.raw)
			}
		}
		fresh, err := cfg.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
		if err != nil {
			t.Fatalf("refresh: %v", err)
		}
		r.get(t, "/v1/schema", fresh.AccessToken).mustStatus(t, 200)
		// Replaying the used refresh token revokes the grant, live token included.
		if _, err := cfg.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Unix(1, 0)}).Token(); err == nil {
			t.Fatal("a replayed refresh token was accepted")
		}
		for _, route := range routes {
			if got = r.get(t, route, fresh.AccessToken); got.status != 403 || got.errCode() != "grant_revoked" {
				t.Fatalf("%s with a revoked grant: %d %s", route, got.status, got.raw)
			}
		}
	})

	t.Run("unknown token", func(t *testing.T) {
		if got := r.get(t, "/v1/schema", "pdppas_at_made_up"); got.status != 401 || got.errCode() != "context.active_false" {
			t.Fatalf("%d %s", got.status, got.raw)
		}
	})

	t.Run("fixed tokens still work", func(t *testing.T) {
		r.get(t, "/v1/schema", demors.GrantClient).mustStatus(t, 200)
	})
}

// TestNoOAuthWithoutConfig: without Config.OAuth no authorization server route
// answers.
func TestNoOAuthWithoutConfig(t *testing.T) {
	r := newRS(t)
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/oauth/register", "/oauth/authorize", "/oauth/token"} {
		if got := r.get(t, path, ""); got.status != 404 {
			t.Fatalf("%s: %d", path, got.status)
		}
	}
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// oauthRedirect is the OAuth client's redirect URI; the test reads the code
// from the redirect to it and never fetches it.
const oauthRedirect = "http://127.0.0.1:9/callback"

// oauthDemoRS starts the demo RS with its authorization server (auto-consent,
// access tokens living ttl) and returns its URL.
func oauthDemoRS(t *testing.T, ttl time.Duration) string {
	t.Helper()
	s, err := demors.New(demors.Config{Tokens: fixedTokens, OAuth: &demors.OAuthConfig{AccessTokenTTL: ttl, AutoConsent: true}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	return srv.URL
}

// startOAuthHTTP serves the adapter over HTTP against provider, with the
// authorization facade for source when it is not empty.
func startOAuthHTTP(t *testing.T, provider, source string) string {
	t.Helper()
	h := httpFlagsFor(provider)
	h.oauthSource = source
	return startHTTPWith(t, &h)
}

// noRedirect shows each redirect instead of following it: the test plays the
// browser hop by hop.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// browse follows an authorization URL as a browser does, up to 5 redirects,
// until it is sent to the redirect URI, and returns every URL it visited
// (the last one being the redirect URI with the code).
func browse(ctx context.Context, start string) ([]string, error) {
	return browseTo(ctx, start, oauthRedirect)
}

// browseTo is browse for a client whose redirect URI is redirect.
func browseTo(ctx context.Context, start, redirect string) ([]string, error) {
	visited := []string{start}
	next := start
	for range 5 { // bound: facade, provider, client
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		if err != nil {
			return visited, err
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			return visited, err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			return visited, fmt.Errorf("GET %s: %d %s", next, resp.StatusCode, body)
		}
		next = resp.Header.Get("Location")
		visited = append(visited, next)
		if strings.HasPrefix(next, redirect+"?") {
			return visited, nil
		}
	}
	return visited, errors.New("too many redirects")
}

// oauthClient is an OAuth client that knows only the MCP URL, written with
// golang.org/x/oauth2 and the go-sdk's discovery and registration helpers,
// plugged into the go-sdk MCP client as its OAuthHandler. Like the clients it
// stands for, it uses its access token until the server refuses it, then
// refreshes on a 401 invalid_token, and authorizes again when the refresh is
// refused. It records each step it takes.
type oauthClient struct {
	mcpURL string
	// redirect is the client's redirect URI (oauthRedirect when empty), and
	// clientID, when set, stands for registration: it returns the client_id
	// to use given the registration endpoint.
	redirect string
	clientID func(ctx context.Context, registrationEndpoint string) (string, error)

	mu       sync.Mutex
	steps    []string
	hops     [][]string // the URLs of each authorization, in order
	cfg      *oauth2.Config
	tok      *oauth2.Token
	prm      *oauthex.ProtectedResourceMetadata
	asm      *oauthex.AuthServerMeta
	previous []string // refresh tokens already used, newest last
}

func (c *oauthClient) step(s string) { c.mu.Lock(); c.steps = append(c.steps, s); c.mu.Unlock() }

// takeSteps returns the steps recorded since the last call.
func (c *oauthClient) takeSteps() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.steps
	c.steps = nil
	return s
}

func (c *oauthClient) token() *oauth2.Token { c.mu.Lock(); defer c.mu.Unlock(); return c.tok }

// TokenSource hands the transport the current access token as it is.
func (c *oauthClient) TokenSource(context.Context) (oauth2.TokenSource, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok == nil {
		return nil, nil
	}
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: c.tok.AccessToken, TokenType: "Bearer"}), nil
}

// Authorize is called by the go-sdk transport on a 401 or 403.
func (c *oauthClient) Authorize(ctx context.Context, _ *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusUnauthorized {
		c.step(fmt.Sprint(resp.StatusCode))
		return fmt.Errorf("refused with %d", resp.StatusCode)
	}
	var errCode, metadataURL string
	for _, ch := range challenges {
		if ch.Scheme == "bearer" {
			errCode, metadataURL = ch.Params["error"], ch.Params["resource_metadata"]
		}
	}
	c.step("401 " + errCode)
	if tok := c.token(); tok != nil && tok.RefreshToken != "" && errCode == "invalid_token" {
		fresh, err := c.cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
		if err == nil {
			c.step("refresh")
			c.mu.Lock()
			c.previous, c.tok = append(c.previous, tok.RefreshToken), fresh
			c.mu.Unlock()
			return nil
		}
		c.step("refresh refused")
	}
	return c.authorize(ctx, metadataURL)
}

// authorize runs discovery (once), registration (once) and the authorization
// code flow with PKCE through the browser.
func (c *oauthClient) authorize(ctx context.Context, metadataURL string) error {
	if c.prm == nil {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, metadataURL, c.mcpURL, http.DefaultClient)
		if err != nil {
			return fmt.Errorf("resource metadata: %w", err)
		}
		c.step("resource metadata")
		// The go-sdk's discovery checks that the document's issuer is the
		// one the resource metadata named.
		asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], http.DefaultClient)
		if err != nil || asm == nil {
			return fmt.Errorf("authorization server metadata: %v", err)
		}
		c.step("authorization server metadata")
		if c.redirect == "" {
			c.redirect = oauthRedirect
		}
		register := c.clientID
		if register == nil {
			register = func(ctx context.Context, endpoint string) (string, error) {
				reg, err := oauthex.RegisterClient(ctx, endpoint, &oauthex.ClientRegistrationMetadata{
					RedirectURIs: []string{oauthRedirect}, TokenEndpointAuthMethod: "none", ClientName: "oauth e2e",
					GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
				}, http.DefaultClient)
				if err != nil {
					return "", err
				}
				return reg.ClientID, nil
			}
		}
		clientID, err := register(ctx, asm.RegistrationEndpoint)
		if err != nil {
			return fmt.Errorf("registration: %w", err)
		}
		c.step("register")
		c.prm, c.asm = prm, asm
		c.cfg = &oauth2.Config{ClientID: clientID, RedirectURL: c.redirect,
			Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
	}
	verifier, state := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()[:16]
	hops, err := browseTo(ctx, c.cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", c.prm.Resource)), c.cfg.RedirectURL)
	c.mu.Lock()
	c.hops = append(c.hops, hops)
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("authorization: %w", err)
	}
	back, _ := url.Parse(hops[len(hops)-1])
	if back.Query().Get("state") != state || back.Query().Get("code") == "" {
		return fmt.Errorf("authorization answer %s", back)
	}
	c.step("authorize")
	tok, err := c.cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	c.step("token")
	c.mu.Lock()
	c.tok = tok
	c.mu.Unlock()
	return nil
}

// searchAndFetch runs search then fetch of its first hit through cs.
func searchAndFetch(ctx context.Context, cs *sdk.ClientSession) error {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"q": "zephyrmarker", "limit": 2}})
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	if res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		return fmt.Errorf("search tool error: %s", b)
	}
	var sc struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &sc) != nil || len(sc.Results) == 0 {
		return fmt.Errorf("search found nothing: %s", b)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "fetch", Arguments: map[string]any{"id": sc.Results[0].ID}})
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	if res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		return fmt.Errorf("fetch tool error: %s", b)
	}
	return nil
}

// waitExpired waits until the RS answers the token 403 grant_expired.
func waitExpired(t *testing.T, provider, token string) {
	t.Helper()
	if !testkit.Eventually(testkit.Patience, func() bool {
		req, _ := http.NewRequest(http.MethodGet, provider+"/v1/schema", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusForbidden
	}) {
		t.Fatal("the access token never expired at the RS")
	}
}

func sameSteps(t *testing.T, when string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("%s: steps\n %q\nwant\n %q", when, got, want)
	}
}

// TestOAuthClientFromTheURLAlone: against the demo RS and its authorization
// server, with --oauth-source, an OAuth client that knows only /mcp gets a
// client grant through the facade and keeps working across expiry, refresh,
// a replayed refresh token and the authorization that follows it.
func TestOAuthClientFromTheURLAlone(t *testing.T) {
	provider := oauthDemoRS(t, 2*time.Second)
	mcpURL := startOAuthHTTP(t, provider, "loom")
	base := strings.TrimSuffix(mcpURL, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 2*testkit.Patience)
	defer cancel()

	oc := &oauthClient{mcpURL: mcpURL}
	cl := sdk.NewClient(&sdk.Implementation{Name: "oauth-e2e", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: mcpURL, OAuthHandler: oc}, nil)
	if err != nil {
		t.Fatalf("connect from the bare URL: %v (steps %q)", err, oc.takeSteps())
	}
	defer cs.Close()

	t.Run("discovery, registration, authorization through the facade", func(t *testing.T) {
		sameSteps(t, "first connection", oc.takeSteps(),
			"401 ", "resource metadata", "authorization server metadata", "register", "authorize", "token")
		if got := oc.prm.AuthorizationServers; len(got) != 1 || got[0] != base {
			t.Fatalf("resource metadata names %v, want this server %s", got, base)
		}
		if oc.asm.Issuer != base || oc.asm.AuthorizationEndpoint != base+"/oauth/authorize" ||
			oc.asm.TokenEndpoint != provider+"/oauth/token" || oc.asm.RegistrationEndpoint != provider+"/oauth/register" {
			t.Fatalf("authorization server metadata %+v: issuer and authorize here, token and registration at the provider", oc.asm)
		}
		hops := oc.hops[0]
		if len(hops) != 3 || !strings.HasPrefix(hops[0], base+"/oauth/authorize?") ||
			!strings.HasPrefix(hops[1], provider+"/oauth/authorize?") || !strings.HasPrefix(hops[2], oauthRedirect+"?") {
			t.Fatalf("browser hops %q: this server, then the provider, then the client", hops)
		}
		sent, _ := url.Parse(hops[0])
		passed, _ := url.Parse(hops[1])
		q := passed.Query()
		if q.Get("connector_id") != "loom" {
			t.Fatalf("the facade must add connector_id: %s", hops[1])
		}
		q.Del("connector_id")
		if q.Encode() != sent.Query().Encode() {
			t.Fatalf("the rest of the query must pass unchanged:\n %s\n %s", hops[0], hops[1])
		}
		if oc.token().Extra("grant_id") == nil || oc.token().Extra("grant_package_id") != nil {
			t.Fatalf("want a client grant: %v", oc.token())
		}
	})

	t.Run("initialize, tools/list, search, fetch", func(t *testing.T) {
		if cs.InitializeResult().Instructions == "" {
			t.Fatal("no instructions")
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) == 0 {
			t.Fatalf("tools/list: %v", err)
		}
		if err := searchAndFetch(ctx, cs); err != nil {
			t.Fatal(err)
		}
		sameSteps(t, "with a live token", oc.takeSteps())
	})

	// An expired or revoked grant is answered with a 401 challenge, which is
	// what makes the client refresh or authorize again.
	t.Run("expiry: 401, refresh, go on", func(t *testing.T) {
		waitExpired(t, provider, oc.token().AccessToken)
		if err := searchAndFetch(ctx, cs); err != nil {
			t.Fatalf("after expiry: %v (steps %q)", err, oc.takeSteps())
		}
		sameSteps(t, "after expiry", oc.takeSteps(), "401 invalid_token", "refresh")
	})

	t.Run("replayed refresh token: revoked, 401, authorize again", func(t *testing.T) {
		if len(oc.previous) == 0 {
			t.Fatal("the expiry step did not refresh, so there is no used refresh token to replay")
		}
		old := oc.previous[len(oc.previous)-1]
		if _, err := oc.cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: old, Expiry: time.Unix(1, 0)}).Token(); err == nil {
			t.Fatal("a used refresh token was accepted again")
		}
		if err := searchAndFetch(ctx, cs); err != nil {
			t.Fatalf("after revocation: %v (steps %q)", err, oc.takeSteps())
		}
		sameSteps(t, "after revocation", oc.takeSteps(), "401 invalid_token", "refresh refused", "authorize", "token")
		if oc.token().Extra("grant_id") == nil {
			t.Fatal("the new authorization must give a client grant")
		}
	})
}

// TestOAuthGoSDKHandler: the go-sdk's own authorization code handler, given
// nothing but the URL and a browser that follows redirects, gets a client
// grant through the facade and reads.
func TestOAuthGoSDKHandler(t *testing.T) {
	provider := oauthDemoRS(t, 0)
	mcpURL := startOAuthHTTP(t, provider, "https://registry.pdpp.dev/connectors/loom")
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	var authorizations int
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{oauthRedirect}, TokenEndpointAuthMethod: "none", ClientName: "go-sdk handler",
			GrantTypes: []string{"authorization_code", "refresh_token"},
		}},
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			authorizations++
			hops, err := browse(ctx, args.URL)
			if err != nil {
				return nil, err
			}
			back, _ := url.Parse(hops[len(hops)-1])
			return &auth.AuthorizationResult{Code: back.Query().Get("code"), State: back.Query().Get("state")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	cl := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-oauth", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: mcpURL, OAuthHandler: h}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if err := searchAndFetch(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if authorizations != 1 {
		t.Fatalf("%d authorizations, want 1", authorizations)
	}
}

// TestOAuthWithoutFacade: without --oauth-source nothing of the facade is
// served and the resource metadata names the provider; a client that names
// no source gets a package token, which this server answers with an
// explained 403, never a 503.
func TestOAuthWithoutFacade(t *testing.T) {
	provider := oauthDemoRS(t, 0)
	mcpURL := startOAuthHTTP(t, provider, "")
	base := strings.TrimSuffix(mcpURL, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()

	t.Run("nothing changes", func(t *testing.T) {
		for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/oauth/authorize"} {
			resp, err := noRedirect.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("%s: %d, want 404", path, resp.StatusCode)
			}
		}
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, base+"/.well-known/oauth-protected-resource/mcp", mcpURL, http.DefaultClient)
		if err != nil || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != provider {
			t.Fatalf("resource metadata %+v (%v), want the provider %s", prm, err, provider)
		}
	})

	oc := &oauthClient{mcpURL: mcpURL}
	if err := oc.authorize(ctx, base+"/.well-known/oauth-protected-resource/mcp"); err != nil {
		t.Fatal(err)
	}
	if oc.token().Extra("grant_package_id") == nil {
		t.Fatalf("without connector_id the provider issues a package token: %v", oc.token())
	}

	// A token that can never read here is an explained 403 that says which
	// grant this server needs.
	t.Run("package token: explained 403, never 503", func(t *testing.T) {
		for range 2 { // the second answer may come from a cached verdict
			resp, body := mcpPost(t, mcpURL, oc.token().AccessToken, "2025-06-18", initBody)
			var reply struct {
				Error struct {
					Message string `json:"message"`
					Data    struct {
						Reason string `json:"reason"`
					} `json:"data"`
				} `json:"error"`
			}
			_ = json.Unmarshal([]byte(body), &reply)
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Retry-After") != "" ||
				reply.Error.Data.Reason != "client_grant_required" || !strings.Contains(reply.Error.Message, "connector_id") {
				t.Fatalf("%d Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
		}
	})
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// inspectorRegistration is the registration request MCP Inspector 2.12
// sends (CLI and web UI alike): an empty scope, its two loopback redirect
// URIs, a public client, and members the server does not use.
const inspectorRegistration = `{"redirect_uris":["http://localhost:6274/oauth/callback","http://localhost:6274/oauth/callback/debug"],` +
	`"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"],` +
	`"client_name":"MCP Inspector","client_uri":"https://github.com/modelcontextprotocol/inspector","scope":""}`

// oauthClientFlow connects oc through the go-sdk client to mcpURL (which
// makes it discover, register or name its client, authorize and get a
// token), then lists tools and runs search and fetch, and checks the steps.
func oauthClientFlow(t *testing.T, mcpURL string, oc *oauthClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	cl := sdk.NewClient(&sdk.Implementation{Name: "oauth-client-shape", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: mcpURL, OAuthHandler: oc}, nil)
	if err != nil {
		t.Fatalf("connect: %v (steps %q)", err, oc.takeSteps())
	}
	defer cs.Close()
	sameSteps(t, "first connection", oc.takeSteps(),
		"401 ", "resource metadata", "authorization server metadata", "register", "authorize", "token")
	if oc.token().Extra("grant_id") == nil {
		t.Fatalf("want a client grant: %v", oc.token())
	}
	if tools, err := cs.ListTools(ctx, nil); err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v", err)
	}
	if err := searchAndFetch(ctx, cs); err != nil {
		t.Fatal(err)
	}
}

// TestOAuthInspectorRegistration: a client registering exactly as MCP
// Inspector does gets a client grant at the demo authorization server
// through the facade and calls tools.
func TestOAuthInspectorRegistration(t *testing.T) {
	provider := oauthDemoRS(t, 0)
	mcpURL := startOAuthHTTP(t, provider, "loom")
	oauthClientFlow(t, mcpURL, &oauthClient{mcpURL: mcpURL, redirect: "http://localhost:6274/oauth/callback",
		clientID: func(ctx context.Context, endpoint string) (string, error) {
			resp, body := testkit.Do(t, http.MethodPost, endpoint, inspectorRegistration, map[string]string{"Content-Type": "application/json"})
			var reg struct {
				ClientID string `json:"client_id"`
			}
			if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &reg) != nil || reg.ClientID == "" {
				return "", fmt.Errorf("%d %s", resp.StatusCode, body)
			}
			return reg.ClientID, nil
		}})
}

// TestOAuthClientMetadataDocument: a client whose client_id is the https URL
// of its metadata document, served by the test, gets a client grant with
// no registration and calls tools. The demo RS fetches the document through
// the test server's TLS client (demors.OAuthConfig.DocumentClient, which no
// flag sets), since the document is on loopback.
func TestOAuthClientMetadataDocument(t *testing.T) {
	var fetched atomic.Int64
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"client_id":"https://%s/client.json","client_name":"document client","redirect_uris":[%q],`+
			`"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`, r.Host, oauthRedirect)
	}))
	t.Cleanup(docs.Close)
	s, err := demors.New(demors.Config{Tokens: fixedTokens, OAuth: &demors.OAuthConfig{AutoConsent: true, DocumentClient: docs.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	rs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { rs.Close(); s.Close() })
	mcpURL := startOAuthHTTP(t, rs.URL, "loom")
	clientID := docs.URL + "/client.json"
	oc := &oauthClient{mcpURL: mcpURL}
	oc.clientID = func(ctx context.Context, endpoint string) (string, error) {
		if !strings.HasSuffix(endpoint, "/oauth/register") {
			return "", fmt.Errorf("registration endpoint %q", endpoint)
		}
		return clientID, nil // no registration: the document is the client
	}
	oauthClientFlow(t, mcpURL, oc)
	// The metadata the client read (the facade's, passing the provider's
	// on) says documents are supported.
	if !oc.asm.ClientIDMetadataDocumentSupported {
		t.Fatal("the authorization server metadata the client read does not advertise client_id_metadata_document_supported")
	}
	if n := fetched.Load(); n != 1 {
		t.Fatalf("the document was fetched %d times, want once", n)
	}
}

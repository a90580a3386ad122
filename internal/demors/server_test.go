package demors_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
)

// TestServersAreDeterministic checks that every server holds the same seeded data (the
// seeding time budget is checked in package store, where the cold path runs).
func TestServersAreDeterministic(t *testing.T) {
	a := newRS(t)
	b := newRS(t)
	for _, path := range []string{
		"/v1/streams/transcripts/records/tr-5?connection_id=cin_demo_loom_main",
		"/v1/streams/transcripts/records/tr-3?connection_id=cin_demo_loom_peer",
		"/v1/streams/videos/records/vid-7?connection_id=cin_demo_loom_main",
		"/v1/streams/notes/records/note-5",
	} {
		t.Run(path, func(t *testing.T) {
			ra := a.get(t, path, demors.GrantClient).mustStatus(t, 200)
			rb := b.get(t, path, demors.GrantClient).mustStatus(t, 200)
			if !bytes.Equal(mustJSON(t, ra.body["data"]), mustJSON(t, rb.body["data"])) {
				t.Errorf("two servers seeded different data for %s", path)
			}
		})
	}
}

func TestConfigTokens(t *testing.T) {
	cases := []struct {
		name    string
		tokens  map[string]string
		wantErr string
	}{
		{"random tokens", nil, ""},
		{"fixed tokens", testTokens, ""},
		{"one fixed", map[string]string{demors.GrantNarrow: "only-narrow"}, ""},
		{"unknown grant", map[string]string{"admin": "x"}, "unknown grant"},
		{"empty token", map[string]string{demors.GrantClient: " "}, "empty"},
		{"shared token", map[string]string{demors.GrantClient: "same", demors.GrantOwner: "same"}, "same token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := demors.New(demors.Config{Tokens: tc.tokens})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			seen := map[string]bool{}
			for _, g := range []string{demors.GrantClient, demors.GrantNarrow, demors.GrantOwner} {
				tok := s.Token(g)
				if want, fixed := tc.tokens[g]; fixed && tok != want {
					t.Errorf("Token(%s) = %q, want fixed %q", g, tok, want)
				}
				if !fixed(tc.tokens, g) && len(tok) < 43 {
					t.Errorf("Token(%s) = %q: random tokens carry 32 random bytes", g, tok)
				}
				if seen[tok] {
					t.Errorf("Token(%s) repeats another grant's token", g)
				}
				seen[tok] = true
			}
			if s.Token("nobody") != "" {
				t.Error("Token of an unknown grant is not empty")
			}
		})
	}
}

func fixed(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func TestAuthentication(t *testing.T) {
	r := newRS(t)
	cases := []struct {
		name, path, grant string
		status            int
		code              string
		wwwAuth           bool
	}{
		{"missing token", "/v1/streams", "", 401, "authentication_error", true},
		{"unknown token", "/v1/streams", "not-a-token", 401, "context.active_false", true},
		{"stream outside grant", "/v1/streams/videos/records", demors.GrantNarrow, 401, "context.stream_not_allowed", true},
		{"unknown stream, client", "/v1/streams/nope/records", demors.GrantClient, 401, "context.stream_not_allowed", true},
		{"unknown stream, owner", "/v1/streams/nope/records", demors.GrantOwner, 404, "not_found", false},
		{"connection outside grant", "/v1/streams/transcripts/records?connection_id=cin_demo_loom_peer", demors.GrantNarrow, 401, "context.instance_mismatch", true},
		{"unknown connection", "/v1/streams/transcripts/records?connection_id=cin_nope", demors.GrantClient, 401, "context.instance_mismatch", true},
		{"connection without the stream", "/v1/streams/transcripts/records?connection_id=cin_demo_notes", demors.GrantClient, 401, "context.stream_not_allowed", true},
		{"unknown record", "/v1/streams/transcripts/records/does-not-exist", demors.GrantClient, 404, "not_found", false},
		{"narrow grant reads its stream", "/v1/streams/transcripts/records?limit=1", demors.GrantNarrow, 200, "", false},
		{"owner token reads", "/v1/streams/videos/records?limit=1", demors.GrantOwner, 200, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := r.get(t, tc.path, tc.grant).mustStatus(t, tc.status)
			if tc.code == "" {
				return
			}
			if resp.errCode() != tc.code {
				t.Errorf("error.code = %q, want %q", resp.errCode(), tc.code)
			}
			for _, k := range []string{"message", "type", "request_id"} {
				if str(resp.errField(k)) == "" {
					t.Errorf("error.%s missing: %s", k, resp.raw)
				}
			}
			wa := resp.header.Get("WWW-Authenticate")
			if tc.wwwAuth {
				want := `Bearer resource_metadata="` + r.http.URL + `/.well-known/oauth-protected-resource"`
				if wa != want {
					t.Errorf("WWW-Authenticate = %q, want %q", wa, want)
				}
				if str(resp.errField("resource_metadata")) != r.http.URL+"/.well-known/oauth-protected-resource" {
					t.Errorf("error.resource_metadata = %v", resp.errField("resource_metadata"))
				}
			} else if wa != "" {
				t.Errorf("unexpected WWW-Authenticate %q", wa)
			}
		})
	}
}

func TestDiscoveryAndRouting(t *testing.T) {
	r := newRS(t)
	t.Run("index", func(t *testing.T) {
		resp := r.get(t, "/", "").mustStatus(t, 200)
		if resp.body["object"] != "pdpp_discovery_index" || str(at(resp.body, "links", "schema")) != "/v1/schema" {
			t.Errorf("index = %s", resp.raw)
		}
	})
	t.Run("protected resource metadata", func(t *testing.T) {
		resp := r.get(t, "/.well-known/oauth-protected-resource", "").mustStatus(t, 200)
		if resp.body["resource"] != r.http.URL || len(list(resp.body["authorization_servers"])) != 1 {
			t.Errorf("metadata = %s", resp.raw)
		}
	})
	t.Run("unknown path", func(t *testing.T) {
		resp := r.get(t, "/v1/nothing-here", demors.GrantClient).mustStatus(t, 404)
		if resp.errCode() != "not_found" {
			t.Errorf("code = %q", resp.errCode())
		}
	})
	t.Run("wrong method", func(t *testing.T) {
		resp := r.do(t, http.MethodPost, "/v1/schema", demors.GrantClient, map[string]any{}).mustStatus(t, 405)
		if resp.header.Get("Allow") != "GET" || resp.errCode() != "method_not_allowed" {
			t.Errorf("Allow = %q, code = %q", resp.header.Get("Allow"), resp.errCode())
		}
	})
	t.Run("bad parameter type", func(t *testing.T) {
		resp := r.get(t, "/v1/streams/transcripts/records?limit=many", demors.GrantNarrow).mustStatus(t, 400)
		if resp.errCode() != "invalid_request" || resp.errField("param") != "limit" {
			t.Errorf("error = %s", resp.raw)
		}
	})
}

func TestListenAndServe(t *testing.T) {
	s, err := demors.New(demors.Config{Tokens: testTokens})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, err := demors.ListenAndServe(ctx, "127.0.0.1:0", s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/") {
		t.Fatalf("base URL = %q", base)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"v1/streams", nil)
	req.Header.Set("Authorization", "Bearer "+testTokens[demors.GrantClient])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base); err == nil {
		t.Error("server still answers after Close")
	}
	if _, err := demors.ListenAndServe(ctx, "127.0.0.1:0", s); err == nil {
		t.Error("ListenAndServe on a closed server succeeded")
	}
}

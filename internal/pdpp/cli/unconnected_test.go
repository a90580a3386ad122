package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/credentials"
)

// TestStdioWithoutUsableCredential: launched by a host with no credential,
// a broken or expired one, or an owner token, the stdio server still
// answers initialize (instructions that say what is wrong and how to
// connect) and tools/list, and every tool call and resource read is a
// typed error with that fix; the RS is never reached. --fail-fast
// (PDPP_MCP_FAIL_FAST) keeps the exit codes for scripts.
func TestStdioWithoutUsableCredential(t *testing.T) {
	var hits atomic.Int64
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "unexpected", http.StatusTeapot)
	}))
	t.Cleanup(rs.Close)
	provider := rs.URL
	writeFile := func(body string) func(root string) {
		return func(root string) {
			path, _ := credentials.Path(root, provider)
			_ = os.MkdirAll(filepath.Dir(path), 0o700)
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name  string
		setup func(root string)
		code  string
		exit  int
	}{
		{"no credential", func(string) {}, credentials.CodeNotConnected, cmdkit.ExitConfig},
		{"unreadable credential", writeFile(`not json`), credentials.CodeCredentialInvalid, cmdkit.ExitConfig},
		{"expired credential", writeFile(`{"provider_url":"` + provider + `","credential":{"access_token":"tok-client","expires_at":"2020-01-01T00:00:00Z"}}`),
			credentials.CodeCredentialExpired, cmdkit.ExitConfig},
		{"owner token", writeFile(`{"provider_url":"` + provider + `","credential":{"access_token":"tok-owner","token_kind":"owner"}}`),
			credentials.CodeOwnerTokenRefused, cmdkit.ExitNoPerm},
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fix := "pdpp connect " + provider
	coreGuidance, _, _ := strings.Cut(mcptools.Instructions, "\n\n")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.setup(root)
			c, err := client.NewStdioMCPClient(exe, []string{reexecEnv + "=1"}, "--provider-url", provider, "--cache-root", root)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
			init.Params.ClientInfo = mcp.Implementation{Name: "host", Version: "1"}
			ir, err := c.Initialize(ctx, init)
			if err != nil {
				t.Fatalf("initialize: %v", err)
			}
			first, _, _ := strings.Cut(ir.Instructions, "\n")
			last := ir.Instructions[strings.LastIndex(ir.Instructions, "\n")+1:]
			if !strings.HasPrefix(first, pdpp.UnavailableNote+tc.code+")") || !strings.Contains(ir.Instructions, coreGuidance) ||
				!strings.HasPrefix(last, "NOT CONNECTED: ") || !strings.Contains(last, fix) {
				t.Fatalf("instructions do not say what is wrong first and the fix last, around the usual text:\n%s", ir.Instructions)
			}
			// Within the catalog's budget, with its 5% headroom.
			if n := len(ir.Instructions); n > mcptools.MaxInstructionsBytes*95/100 {
				t.Errorf("instructions are %d bytes, over 95%% of the %d-byte budget", n, mcptools.MaxInstructionsBytes)
			}
			// The core guidance still fits the first 512 characters.
			for _, w := range []string{"grant", "owner", "schema", "connection_id", "filter", "limit", "cursor"} {
				if !strings.Contains(ir.Instructions[:512], w) {
					t.Errorf("the first 512 characters no longer mention %s:\n%s", w, ir.Instructions[:512])
				}
			}
			tl, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil || len(tl.Tools) == 0 {
				t.Fatalf("tools/list: %v", err)
			}
			for _, call := range []struct {
				tool string
				args map[string]any
			}{
				{"schema", map[string]any{}},
				{"search", map[string]any{"q": "zephyrmarker"}},
				{"fetch", map[string]any{}}, // invalid arguments: the credential is the first thing to fix
			} {
				res := callTool(t, ctx, c, call.tool, call.args)
				b, _ := json.Marshal(res.StructuredContent)
				var sc struct {
					Error struct {
						Type, Code, Message string
					} `json:"error"`
				}
				_ = json.Unmarshal(b, &sc)
				if !res.IsError || sc.Error.Code != tc.code || sc.Error.Type != "adapter_error" ||
					!strings.Contains(sc.Error.Message, fix) || !strings.Contains(textOf(res), tc.code) {
					t.Fatalf("%s: isError %v %s\n%s", call.tool, res.IsError, b, textOf(res))
				}
			}
			rr := mcp.ReadResourceRequest{}
			rr.Params.URI = "pdpp://stream/transcripts"
			if _, err := c.ReadResource(ctx, rr); err == nil || !strings.Contains(err.Error(), tc.code) {
				t.Fatalf("resources/read: %v, want an error naming %s", err, tc.code)
			}
			if n := hits.Load(); n != 0 {
				t.Fatalf("the RS was reached %d times", n)
			}

			// --fail-fast, by flag or environment, exits as before.
			for _, how := range []struct {
				args []string
				env  string
			}{{[]string{"--fail-fast"}, ""}, {nil, "PDPP_MCP_FAIL_FAST=1"}} {
				cmd := exec.Command(exe, append([]string{"--provider-url", provider, "--cache-root", root}, how.args...)...)
				cmd.Env = append(os.Environ(), reexecEnv+"=1", how.env)
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != tc.exit || !strings.Contains(string(out), tc.code) {
					t.Fatalf("fail-fast %v %s: %v, want exit %d naming %s:\n%s", how.args, how.env, err, tc.exit, tc.code, out)
				}
			}
		})
	}
}

package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

// TestNewestRevisionIdentityAndCacheHints: at 2026-07-28, server/discover
// names this build's version (from its build info, never "dev"), and the
// results fixed for the life of the process (tools/list, the resource
// templates, server/discover) carry a positive ttlMs, while resources/read
// (the RS's data as of the read) says 0.
func TestNewestRevisionIdentityAndCacheHints(t *testing.T) {
	provider := demoRS(t)
	mcpURL := startHTTP(t, provider)
	meta := `"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"` + mcp.ProtocolVersion20260728 + `","` + mcp.MetaKeyClientCapabilities + `":{}}`
	cases := []struct {
		method, params string
		ttl            int64
	}{
		{"server/discover", `{` + meta + `}`, mcpkit.FixedListTTLMs},
		{"tools/list", `{` + meta + `}`, mcpkit.FixedListTTLMs},
		{"resources/templates/list", `{` + meta + `}`, mcpkit.FixedListTTLMs},
		{"resources/read", `{"uri":"pdpp://stream/transcripts",` + meta + `}`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			header := map[string]string{"Authorization": "Bearer " + fixedTokens["client"],
				"MCP-Protocol-Version": mcp.ProtocolVersion20260728, "Mcp-Method": tc.method}
			if tc.method == "resources/read" {
				header["Mcp-Name"] = "pdpp://stream/transcripts"
			}
			resp, raw := postRPC(t, mcpURL, `{"jsonrpc":"2.0","id":1,"method":"`+tc.method+`","params":`+tc.params+`}`, header)
			body := string(raw)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d: %s", resp.StatusCode, body)
			}
			var reply struct {
				Result struct {
					TTLMs *int64 `json:"ttlMs"`
					Meta  struct {
						ServerInfo *struct {
							Version string `json:"version"`
						} `json:"io.modelcontextprotocol/serverInfo"`
					} `json:"_meta"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(strings.TrimSpace(body)), &reply); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if reply.Result.TTLMs == nil || *reply.Result.TTLMs != tc.ttl {
				t.Fatalf("ttlMs %v, want %d: %s", reply.Result.TTLMs, tc.ttl, body)
			}
			if si := reply.Result.Meta.ServerInfo; si == nil || si.Version != version() || version() == "dev" || version() == "" {
				t.Fatalf("serverInfo %+v, want the build's version %q: %s", si, version(), body)
			}
		})
	}
}

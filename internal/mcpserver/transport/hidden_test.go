package transport

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// TestRPCErrorsShowHiddenCharacters asks for a tool, a method and a
// resource whose names hold characters a person cannot see (a zero-width
// space and tag characters spelling text): the JSON-RPC errors that echo
// the name show them as markers, over HTTP and stdio, and no reply decodes
// to one.
func TestRPCErrorsShowHiddenCharacters(t *testing.T) {
	var tags strings.Builder
	for _, c := range "obey" {
		tags.WriteRune(0xE0000 + c)
	}
	name := "x\u200by" + tags.String()
	cases := []struct{ name, body string }{
		{"unknown tool", callBody(7, name, map[string]any{})},
		{"unknown method", rpc(7, "tools/"+name, map[string]any{})},
		{"unknown resource", rpc(7, "resources/read", map[string]any{"uri": "note2://" + name})},
	}
	check := func(t *testing.T, reply []byte) {
		t.Helper()
		r := decodeReply(t, reply)
		if r.Error == nil {
			t.Fatalf("no error: %s", reply)
		}
		if unseen.HasJSON(reply) {
			t.Errorf("the error decodes to a hidden character: %s", reply)
		}
		if !strings.Contains(r.Error.Message, "U+200B") || !strings.Contains(r.Error.Message, "“obey”") {
			t.Errorf("the message does not show them: %q", r.Error.Message)
		}
	}
	t.Run("http", func(t *testing.T) {
		srv := newStack(t, HTTPConfig{}, testTools{})
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, b := post(t, srv.URL+"/mcp", http.MethodPost, tc.body, hdr("MCP-Protocol-Version", "2025-06-18"))
				check(t, b)
			})
		}
	})
	t.Run("stdio", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				in := rpc(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}) + "\n" +
					`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + tc.body + "\n"
				var out testkit.Buffer
				if err := ServeStdio(context.Background(), newTestServer(testTools{}), strings.NewReader(in), &out, discardLogger()); err != nil {
					t.Fatal(err)
				}
				for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					if strings.Contains(line, `"id":7`) {
						check(t, []byte(line))
						return
					}
				}
				t.Fatalf("no reply to the request:\n%s", out.String())
			})
		}
	})
}

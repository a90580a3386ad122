package cli

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// oneHits matches a count of one followed by a plural noun ("1 hits").
var oneHits = regexp.MustCompile(`(^|[^0-9.,])1 (hits|records|connectors|streams|fields|buckets|values)\b`)

// TestCountsAgreeInNumber: the terminal's search and the texts it shares
// with MCP clients say "1 hit", "1 record", "1 stream", and "2 hits".
func TestCountsAgreeInNumber(t *testing.T) {
	url := demoRS(t)
	root := t.TempDir()
	writeCred(t, root, url, nil)

	t.Run("terminal search", func(t *testing.T) {
		for _, tc := range []struct {
			limit, want string
		}{
			{"1", `search "zephyrmarker" (lexical): 1 hit on this page`},
			{"2", `search "zephyrmarker" (lexical): 2 hits on this page`},
		} {
			code, out, errOut := run(t, "search", "zephyrmarker", "--limit", tc.limit, "--provider-url", url, "--cache-root", root)
			if code != 0 {
				t.Fatalf("search --limit %s: exit %d\n%s", tc.limit, code, errOut)
			}
			if !strings.Contains(out, tc.want) || oneHits.MatchString(out) {
				t.Errorf("search --limit %s output lacks %q or says 1 with a plural:\n%s", tc.limit, tc.want, out)
			}
		}
	})

	// The same texts through an MCP client of the server the terminal
	// commands run, with each grant of the demo RS.
	cases := []struct {
		name, token, tool string
		args              map[string]any
		want              string
	}{
		{"one record", fixedTokens["client"], "query_records",
			map[string]any{"stream": "transcripts", "connection_id": "cin_demo_loom_main", "limit": 1}, "query_records stream=transcripts: 1 record on this page"},
		{"two records", fixedTokens["client"], "query_records",
			map[string]any{"stream": "transcripts", "connection_id": "cin_demo_loom_main", "limit": 2}, "query_records stream=transcripts: 2 records on this page"},
		{"one record matched", fixedTokens["client"], "aggregate",
			map[string]any{"stream": "notes", "metric": "count", "filter": map[string]any{"id": "note-2"}}, "(1 record matched)"},
		{"one connector, one stream", fixedTokens["narrow"], "schema", map[string]any{}, "schema: 1 connector, 1 stream"},
		{"several connectors and streams", fixedTokens["client"], "schema", map[string]any{}, "schema: 2 connectors, 3 streams"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := inProcessClient(t, ctx, url, tc.token)
			res := callTool(t, ctx, c, tc.tool, tc.args)
			text := textOf(res)
			if res.IsError {
				t.Fatalf("%s failed: %s", tc.tool, text)
			}
			if !strings.Contains(text, tc.want) || oneHits.MatchString(text) {
				t.Errorf("%s text lacks %q or says 1 with a plural:\n%s", tc.tool, tc.want, text)
			}
		})
	}
}

// inProcessClient connects mcp-go's in-process client to the adapter the
// terminal commands build, reading provider with token.
func inProcessClient(t *testing.T, ctx context.Context, provider, token string) *client.Client {
	t.Helper()
	cm := common{providerURL: provider, serverName: "pdpp", toolsets: "read", rsTimeout: 10 * time.Second}
	s, _, err := cm.buildServer(slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context) (string, error) { return token, nil })
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := startSession(ctx, c, mcp.LATEST_PROTOCOL_VERSION, "plural-test"); err != nil {
		t.Fatal(err)
	}
	return c
}

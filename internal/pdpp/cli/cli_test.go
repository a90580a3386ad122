package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/credentials"
)

// The test binary doubles as pdpp-mcp-server: with this variable set it runs
// the command line instead of the tests, so stdio is tested as a real process.
const reexecEnv = "PDPP_MCP_CLI_TEST_REEXEC"

func TestMain(m *testing.M) {
	if os.Getenv(reexecEnv) == "1" {
		os.Exit(Main(Env{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	os.Exit(m.Run())
}

var fixedTokens = map[string]string{"client": "tok-client", "narrow": "tok-narrow", "owner": "tok-owner"}

// demoRS starts the embedded demo RS on loopback.
func demoRS(t *testing.T) string {
	t.Helper()
	s, err := demors.New(demors.Config{Tokens: fixedTokens})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	return srv.URL
}

func writeCred(t *testing.T, root, provider string, mutate func(*credentials.File)) {
	t.Helper()
	f := credentials.File{ProviderURL: provider, CreatedAt: time.Now().UTC().Format(time.RFC3339),
		Credential: credentials.Credential{AccessToken: fixedTokens["client"], TokenType: "Bearer", GrantID: "grt_test"}}
	if mutate != nil {
		mutate(&f)
	}
	if _, err := credentials.Write(root, f); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code = MainContext(ctx, Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// callTool calls tool with args through c; a protocol error fails the test
// (a tool error is the caller's to judge).
func callTool(t *testing.T, ctx context.Context, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func TestExitCodes(t *testing.T) {
	url := demoRS(t)
	root := t.TempDir()
	ownerRoot := t.TempDir()
	// An owner credential as pdpp connect would never write it, but a user might.
	path, _ := credentials.Path(ownerRoot, url)
	_ = os.MkdirAll(filepath.Dir(path), 0o700)
	_ = os.WriteFile(path, []byte(`{"provider_url":"`+url+`","credential":{"access_token":"tok-owner","token_type":"Bearer","token_kind":"owner"}}`), 0o600)
	cases := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"help", []string{"--help"}, cmdkit.ExitOK, ""},
		{"version", []string{"--version"}, cmdkit.ExitOK, ""},
		{"unknown command", []string{"frobnicate"}, cmdkit.ExitUsage, "unknown command"},
		{"missing provider", []string{"stdio", "--cache-root", root}, cmdkit.ExitUsage, "--provider-url"},
		{"bad provider", []string{"--provider-url", "ftp://x", "--cache-root", root}, cmdkit.ExitUsage, "http(s)"},
		{"not connected", []string{"--provider-url", url, "--cache-root", root, "--fail-fast"}, cmdkit.ExitConfig, "pdpp connect " + url},
		{"owner refused", []string{"--provider-url", url, "--cache-root", ownerRoot, "--fail-fast"}, cmdkit.ExitNoPerm, "pdpp connect " + url},
		{"not connected, serving the reason", []string{"--provider-url", url, "--cache-root", root}, cmdkit.ExitOK, "not_connected"},
		{"unknown toolset", []string{"http", "--provider-url", url, "--toolsets", "admin"}, cmdkit.ExitUsage, "unknown toolset"},
		{"bad flag", []string{"stdio", "--no-such-flag"}, cmdkit.ExitUsage, "no-such-flag"},
		{"full ceiling below compact", []string{"http", "--provider-url", url, "--full-max-bytes", "1000"}, cmdkit.ExitUsage, "--full-max-bytes must be at least"},
		{"in-flight bound below one body", []string{"http", "--provider-url", url, "--max-inflight-bytes", "1000000"}, cmdkit.ExitUsage, "--max-inflight-bytes must hold"},
		{"in-flight bound below a raised ceiling", []string{"http", "--provider-url", url, "--full-max-bytes", "67108864"}, cmdkit.ExitUsage, "--max-inflight-bytes must hold"},
		{"in-flight bound below a body and its escaped copy", []string{"http", "--provider-url", url, "--full-max-bytes", "31457280"}, cmdkit.ExitUsage, "escaped copy of a full reply"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.inStderr) {
				t.Fatalf("stderr lacks %q:\n%s", tc.inStderr, stderr)
			}
			if tc.code != cmdkit.ExitOK && stdout != "" {
				t.Fatalf("stdout must stay empty on failure, got %q", stdout)
			}
		})
	}
}

// TestStdioJourney runs the server as a subprocess speaking MCP over stdio:
// initialize, tools/list, then search -> fetch -> read_record_field with the
// matched text visible in content[].
func TestStdioJourney(t *testing.T) {
	url := demoRS(t)
	root := t.TempDir()
	writeCred(t, root, url, nil)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewStdioMCPClient(exe, []string{reexecEnv + "=1"}, "--provider-url", url, "--cache-root", root)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	ir, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ir.Instructions, "schema") || ir.Capabilities.Prompts != nil || ir.Capabilities.Logging != nil {
		t.Fatalf("initialize: instructions %q, capabilities %+v", ir.Instructions, ir.Capabilities)
	}
	tl, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tl.Tools {
		names[tool.Name] = true
		a := tool.Annotations
		if tool.Title == "" || tool.Description == "" || a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("tool %s lacks title, description or a hint", tool.Name)
		}
	}
	// The default exposure: every catalog tool.
	for _, tool := range mcptools.Tools() {
		if !names[tool.Name] {
			t.Errorf("tool %s missing", tool.Name)
		}
	}
	if len(names) != len(mcptools.Tools()) {
		t.Errorf("tools/list has %d tools, the catalog %d", len(names), len(mcptools.Tools()))
	}
	callText := func(tool string, args map[string]any) (string, *mcp.CallToolResult) {
		t.Helper()
		res := callTool(t, ctx, c, tool, args)
		txt := textOf(res)
		if res.IsError {
			t.Fatalf("%s failed: %s", tool, txt)
		}
		return txt, res
	}
	text, _ := callText("search", map[string]any{"q": "zephyrmarker", "streams": []string{"transcripts"}, "limit": 3})
	if !strings.Contains(text, "<mark>zephyrmarker</mark>") {
		t.Fatalf("matched text not visible:\n%s", text)
	}
	first := strings.TrimPrefix(strings.SplitN(text, "\n", 2)[0], "first_fetch_id=")
	ftext, _ := callText("fetch", map[string]any{"id": first})
	if !strings.Contains(ftext, "id="+first) {
		t.Fatalf("fetch text lacks identity:\n%s", ftext)
	}
	rtext, _ := callText("read_record_field", map[string]any{"id": first, "field_path": "text", "q": "zephyrmarker"})
	if !strings.Contains(rtext, "zephyrmarker") || !strings.Contains(rtext, "match at") {
		t.Fatalf("window lacks the match:\n%s", rtext)
	}
}

// TestTerminalParity checks the CLI search prints the evidence cards and an
// exact next command, and that running that command reads the same window.
func TestTerminalParity(t *testing.T) {
	url := demoRS(t)
	root := t.TempDir()
	writeCred(t, root, url, nil)
	code, out, errOut := run(t, "search", "zephyrmarker", "--stream", "transcripts", "--limit", "2", "--provider-url", url, "--cache-root", root)
	if code != 0 {
		t.Fatalf("search exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "<mark>zephyrmarker</mark>") || !strings.Contains(out, "next command: pdpp-mcp-server read-field ") {
		t.Fatalf("search output:\n%s", out)
	}
	line := out[strings.Index(out, "next command: ")+len("next command: "):]
	line = strings.TrimSpace(strings.SplitN(line, "\n", 2)[0])
	args := shellSplit(t, line)[1:] // drop the program name
	code, out2, errOut := run(t, args...)
	if code != 0 {
		t.Fatalf("read-field exit %d: %s", code, errOut)
	}
	if !strings.Contains(out2, "zephyrmarker") || !strings.Contains(out2, "match at") {
		t.Fatalf("read-field output:\n%s", out2)
	}
	// Paging forward with the printed command keeps working.
	if i := strings.Index(out2, "next command: "); i >= 0 {
		next := shellSplit(t, strings.TrimSpace(strings.SplitN(out2[i+len("next command: "):], "\n", 2)[0]))[1:]
		if code, _, errOut := run(t, next...); code != 0 {
			t.Fatalf("next read-field exit %d: %s", code, errOut)
		}
	}
	// --json prints structured output, the window text included (a compact
	// result keeps the text only in content[], which --json does not print).
	code, js, _ := run(t, "read-field", "cin_demo_loom_main/transcripts:tr-1", "text", "--limit-chars", "100", "--json", "--provider-url", url, "--cache-root", root)
	var v struct {
		Text       string `json:"text"`
		NextCursor string `json:"next_cursor"`
		Window     struct {
			StartChars int `json:"start_chars"`
			EndChars   int `json:"end_chars"`
		} `json:"window"`
	}
	if code != 0 || json.Unmarshal([]byte(js), &v) != nil || v.Window.EndChars != 100 {
		t.Fatalf("--json output (%d):\n%s", code, js)
	}
	if n := utf8.RuneCountInString(v.Text); n != 100 || !strings.HasPrefix(v.Text, "Transcript 1.") {
		t.Fatalf("--json text has %d characters, want the 100-character window:\n%s", n, js)
	}
	// The cursor alone names the record and field: the next window follows.
	code, js, errOut = run(t, "read-field", "--cursor", v.NextCursor, "--json", "--provider-url", url, "--cache-root", root)
	v.Window.StartChars = -1
	if code != 0 || v.NextCursor == "" || json.Unmarshal([]byte(js), &v) != nil || v.Window.StartChars != 100 {
		t.Fatalf("read-field --cursor alone (%d):\n%s\n%s", code, js, errOut)
	}
}

// TestSearchNextCommandPrefersProvenWindow: when the first hits matched
// only a title (no proven window), the printed next command reads the
// first hit that has one, around its match, and runs as printed.
func TestSearchNextCommandPrefersProvenWindow(t *testing.T) {
	url := demoRS(t)
	root := t.TempDir()
	writeCred(t, root, url, nil)
	code, out, errOut := run(t, "search", "zephyrmarker", "--limit", "5", "--provider-url", url, "--cache-root", root)
	if code != 0 {
		t.Fatalf("search exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "matched title; no proven text window") {
		t.Fatalf("want a title-only hit first on the demo RS:\n%s", out)
	}
	i := strings.Index(out, "next command: ")
	if i < 0 {
		t.Fatalf("no next command:\n%s", out)
	}
	line := strings.TrimSpace(strings.SplitN(out[i+len("next command: "):], "\n", 2)[0])
	if !strings.Contains(line, " --q zephyrmarker ") || strings.Contains(line, " title ") {
		t.Fatalf("next command does not read a proven window around the match: %s", line)
	}
	code, out2, errOut := run(t, shellSplit(t, line)[1:]...)
	if code != 0 || !strings.Contains(out2, "match at") {
		t.Fatalf("next command exit %d: %s\n%s", code, errOut, out2)
	}
}

// shellSplit splits a command line printed by readFieldCommand.
func shellSplit(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\'' && !inQuote:
			inQuote, have = true, true
		case ch == '\'' && inQuote:
			if strings.HasPrefix(s[i:], `'\''`) {
				cur.WriteByte('\'')
				i += 3
				continue
			}
			inQuote = false
		case ch == ' ' && !inQuote:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(ch)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

func TestDemoOnce(t *testing.T) {
	code, out, errOut := run(t, "demo", "--once", "--listen", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("demo exit %d: %s", code, errOut)
	}
	for _, want := range []string{"demo --once: the sample journey against http://127.0.0.1:", "run without --once", "$ search", "first_fetch_id=", "$ read_record_field", "$ fetch"} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	// The client settings would be dead when the command exits.
	for _, not := range []string{"mcpServers", "Bearer", "npx", "claude mcp add", "Prometheus metrics"} {
		if strings.Contains(out, not) {
			t.Fatalf("demo --once prints %q, which is dead once it exits:\n%s", not, out)
		}
	}
}

// TestDemoAllowsInspectorOrigin: the demo lets MCP Inspector's browser UI
// connect (CORS preflight and POST), while other origins stay refused.
func TestDemoAllowsInspectorOrigin(t *testing.T) {
	var h httpFlags
	h.providerURL = demoRS(t)
	h.serverName, h.toolsets, h.rsTimeout = "pdpp", "read", 10*time.Second
	h.Listen, h.MaxBodyBytes = "127.0.0.1:0", 1<<20
	h.Origins, h.CORS = inspectorOrigins, true
	mcpURL := startHTTPWith(t, &h)
	cases := []struct {
		method, origin string
		want           int
	}{
		{http.MethodOptions, "http://localhost:6274", http.StatusNoContent},
		{http.MethodPost, "http://localhost:6274", http.StatusOK},
		{http.MethodPost, "http://evil.example", http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.origin, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Origin", tc.origin)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+fixedTokens["client"])
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want && !(tc.method == http.MethodOptions && resp.StatusCode == http.StatusOK) {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want != http.StatusForbidden && resp.Header.Get("Access-Control-Allow-Origin") != tc.origin {
				t.Fatalf("no CORS allow header for %s", tc.origin)
			}
		})
	}
}

// TestAllowPrivateWebhooksFlag checks where private webhook callbacks are
// allowed: off for the serving commands unless the flag or its environment
// variable says so, on in the demo unless turned off; an environment value
// that is not a boolean is a usage error naming the variable. Where it is
// on, a loopback callback reaches the RS through create_event_subscription.
func TestAllowPrivateWebhooksFlag(t *testing.T) {
	provider := demoRS(t)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hook.Close)
	tests := []struct {
		name string
		demo bool
		env  string
		args []string
		want bool
		err  string
	}{
		{"serving default", false, "", nil, false, ""},
		{"serving flag", false, "", []string{"--allow-private-webhooks"}, true, ""},
		{"serving environment true", false, "true", nil, true, ""},
		{"serving environment 1", false, "1", nil, true, ""},
		{"serving environment YES", false, "YES", nil, true, ""},
		{"serving environment 0", false, "0", nil, false, ""},
		{"serving environment not a boolean", false, "on", nil, false, "PDPP_MCP_ALLOW_PRIVATE_WEBHOOKS"},
		{"demo default", true, "", nil, true, ""},
		{"demo environment off", true, "false", nil, false, ""},
		{"demo environment no", true, "no", nil, false, ""},
		{"demo flag off", true, "", []string{"--allow-private-webhooks=false"}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{Stderr: io.Discard, Getenv: func(k string) string {
				if k == "PDPP_MCP_ALLOW_PRIVATE_WEBHOOKS" {
					return tc.env
				}
				return ""
			}}
			c := common{providerURL: provider, rsTimeout: 10 * time.Second}
			f := cmdkit.NewFlagSet(env, "pdpp-mcp-server", "test", "")
			err := c.registerServing(f, tc.demo)
			if tc.err != "" {
				var ee *cmdkit.ExitError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &ee) || ee.Code != cmdkit.ExitUsage {
					t.Fatalf("want a usage error naming %s, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if c.allowPrivateWebhooks != tc.want {
				t.Fatalf("allowPrivateWebhooks = %v, want %v", c.allowPrivateWebhooks, tc.want)
			}
			// What the setting does: a loopback callback is handed to the RS
			// or refused, naming the argument.
			s, _, err := c.buildServer(slog.New(slog.DiscardHandler), func(context.Context) (string, error) { return fixedTokens["client"], nil })
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cl, err := client.NewInProcessClient(s)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if _, err := cl.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				t.Fatal(err)
			}
			res := callTool(t, ctx, cl, "create_event_subscription", map[string]any{"callback_url": hook.URL + "/hook", "streams": []string{"transcripts"}})
			b, _ := json.Marshal(res.StructuredContent)
			if res.IsError == tc.want || (!tc.want && !strings.Contains(string(b), "callback_url")) {
				t.Fatalf("allowed %v, create_event_subscription with a loopback callback: isError %v %s", tc.want, res.IsError, b)
			}
		})
	}
}

// TestPortClashNamesTheCommandsFlag: an occupied address is exit 69 with a
// hint naming the flag of the command that was run.
func TestPortClashNamesTheCommandsFlag(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	cases := []struct {
		args      []string
		flag, not string
	}{
		{[]string{"demo-rs", "--listen", addr, "--cache-root", t.TempDir()}, "--listen,", "--rs-listen"},
		{[]string{"demo", "--rs-listen", addr, "--listen", "127.0.0.1:0", "--once"}, "--rs-listen,", "--listen,"},
	}
	for _, tc := range cases {
		t.Run(tc.args[0], func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != cmdkit.ExitUnavailable || !strings.Contains(stderr, "pick another address with "+tc.flag) || strings.Contains(stderr, tc.not) {
				t.Fatalf("exit %d, want %d with a hint naming %s only:\n%s", code, cmdkit.ExitUnavailable, tc.flag, stderr)
			}
		})
	}
}

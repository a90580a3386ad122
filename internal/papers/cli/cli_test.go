package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	srvtransport "github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// Transport scenarios of seed 002, served by the http command.

// Scenario: Initialize MCP capabilities.
func TestScenarioInitializeCapabilities(t *testing.T) {
	url := startHTTP(t, httpFlags{})
	resp, body := do(t, http.MethodPost, url, initializeBody, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatal("a session id was issued")
	}
	var r struct {
		Result struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
			Instructions string                     `json:"instructions"`
			ServerInfo   struct{ Name string }      `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	var caps []string
	for k := range r.Result.Capabilities {
		caps = append(caps, k)
	}
	slices.Sort(caps)
	if !slices.Equal(caps, []string{"resources", "tools"}) {
		t.Fatalf("capabilities %v, want exactly resources and tools", caps)
	}
	if r.Result.Instructions == "" || r.Result.ServerInfo.Name != "paper-snapshot" {
		t.Fatalf("instructions %q server %q", r.Result.Instructions, r.Result.ServerInfo.Name)
	}
	// No prompts: prompts/list is not a method of this server.
	_, body = do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":3,"method":"prompts/list"}`, map[string]string{"MCP-Protocol-Version": "2025-06-18"})
	if !strings.Contains(body, `"error"`) {
		t.Fatalf("prompts/list answered: %s", body)
	}
}

// Scenario: GET not supported.
func TestScenarioGetNotSupported(t *testing.T) {
	url := startHTTP(t, httpFlags{})
	for _, header := range []map[string]string{nil, {"Accept": "text/event-stream"}} {
		resp, body := do(t, http.MethodGet, url, "", header)
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("GET %v: status %d: %s", header, resp.StatusCode, body)
		}
	}
}

// Scenario: Invalid protocol version.
func TestScenarioInvalidProtocolVersion(t *testing.T) {
	url := startHTTP(t, httpFlags{})
	tests := []struct {
		name, version string
		want          int
	}{
		{"unsupported", "1999-01-01", http.StatusBadRequest},
		{"garbage", "latest", http.StatusBadRequest},
		{"supported", "2025-06-18", http.StatusOK},
		{"absent means 2025-03-26", "", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.version != "" {
				h["MCP-Protocol-Version"] = tc.version
			}
			resp, body := do(t, http.MethodPost, url, toolsListBody, h)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
		})
	}
}

// Scenario: Reject disallowed origin.
func TestScenarioRejectDisallowedOrigin(t *testing.T) {
	url := startHTTP(t, httpFlags{HTTPFlags: cmdkit.HTTPFlags{Origins: "https://app.example, http://localhost:5173"}})
	tests := []struct {
		origin string
		want   int
	}{
		{"https://evil.example", http.StatusForbidden},
		{"http://localhost:5174", http.StatusForbidden},
		{"https://app.example", http.StatusOK},
		{"http://localhost:5173", http.StatusOK},
		{"", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.origin, func(t *testing.T) {
			h := map[string]string{}
			if tc.origin != "" {
				h["Origin"] = tc.origin
			}
			resp, body := do(t, http.MethodPost, url, toolsListBody, h)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
		})
	}
}

// TestBearerTokenOnlyWhenConfigured pins every header and body member of
// the static bearer check's 401s, and that the configured token is
// compared as given: it need not be RFC 6750 b64token syntax, and white
// space around it in the header is ignored.
func TestBearerTokenOnlyWhenConfigured(t *testing.T) {
	open := startHTTP(t, httpFlags{})
	if resp, body := do(t, http.MethodPost, open, toolsListBody, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("no token configured: %d %s", resp.StatusCode, body)
	}
	const token = "s3cret!token"
	guarded := startHTTP(t, httpFlags{bearerToken: token})
	const (
		missing   = "authorization required: send Authorization: Bearer <token>"
		malformed = "malformed Authorization header: send Authorization: Bearer <token>"
	)
	tests := []struct {
		name      string
		method    string
		auth      string
		want      int
		challenge string // the whole WWW-Authenticate of a 401
		message   string // the whole 401 message
		reason    string
	}{
		{"missing", http.MethodPost, "", http.StatusUnauthorized, `Bearer realm="paper-mcp"`, missing, "missing_token"},
		{"wrong", http.MethodPost, "Bearer nope", http.StatusUnauthorized, `Bearer realm="paper-mcp", error="invalid_token"`,
			"the bearer token was not accepted: send the token this server was started with (--bearer-token)", "invalid_token"},
		{"wrong scheme", http.MethodPost, "Basic " + token, http.StatusUnauthorized, `Bearer realm="paper-mcp", error="invalid_request"`, malformed, "malformed_token"},
		{"no token after the scheme", http.MethodPost, "Bearer", http.StatusUnauthorized, `Bearer realm="paper-mcp", error="invalid_request"`, malformed, "malformed_token"},
		{"right, outside b64token syntax", http.MethodPost, "Bearer " + token, http.StatusOK, "", "", ""},
		{"scheme case-insensitive", http.MethodPost, "bearer " + token, http.StatusOK, "", "", ""},
		{"white space around the token", http.MethodPost, "Bearer  " + token + " ", http.StatusOK, "", "", ""},
		{"GET still 405", http.MethodGet, "", http.StatusMethodNotAllowed, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.auth != "" {
				h["Authorization"] = tc.auth
			}
			body := toolsListBody
			if tc.method == http.MethodGet {
				body = ""
			}
			resp, b := do(t, tc.method, guarded, body, h)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			if tc.want == http.StatusUnauthorized {
				checkUnauthorized(t, resp, b, tc.challenge, tc.message, tc.reason)
			}
		})
	}
	var out strings.Builder
	if err := runJourney(t.Context(), &out, guarded, token); err != nil {
		t.Fatalf("journey with the token: %v", err)
	}
}

// checkUnauthorized checks a 401 of the static bearer check: its whole
// challenge, and a JSON-RPC error body (id null, code -32001) with message
// and data {"reason": reason}.
func checkUnauthorized(t *testing.T, resp *http.Response, body, challenge, message, reason string) {
	t.Helper()
	if got := resp.Header.Get("WWW-Authenticate"); got != challenge {
		t.Errorf("WWW-Authenticate = %q, want %q", got, challenge)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, body)
	}
	want := map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code": float64(-32001), "message": message, "data": map[string]any{"reason": reason},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("body = %s, want %v", body, want)
	}
}

func TestExitCodes(t *testing.T) {
	snap := fixture(t)
	dir := t.TempDir()
	notSnapshot := filepath.Join(dir, "notes.sqlite3")
	if err := os.WriteFile(notSnapshot, []byte("plain text, not a database at all, padded to look like a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		err  string
	}{
		{"version", []string{"version"}, nil, cmdkit.ExitOK, ""},
		{"help", []string{"--help"}, nil, cmdkit.ExitOK, ""},
		{"unknown command", []string{"serve"}, nil, cmdkit.ExitUsage, `unknown command "serve"`},
		{"no snapshot", []string{"stdio", "--assets", snap.AssetsDir}, nil, cmdkit.ExitUsage, "--snapshot"},
		{"no assets", []string{"http", "--snapshot", snap.DBPath}, nil, cmdkit.ExitUsage, "--assets"},
		{"not a snapshot", []string{"--snapshot", notSnapshot, "--assets", snap.AssetsDir}, nil, cmdkit.ExitConfig, "not a paper snapshot"},
		{"missing snapshot", []string{"--snapshot", filepath.Join(dir, "none.sqlite3"), "--assets", snap.AssetsDir}, nil, cmdkit.ExitConfig, "no such file"},
		{"missing assets folder", []string{"--snapshot", snap.DBPath, "--assets", filepath.Join(dir, "none")}, nil, cmdkit.ExitConfig, "folder"},
		{"bad base URL", []string{"--snapshot", snap.DBPath, "--assets-base-url", "static/"}, nil, cmdkit.ExitConfig, "absolute http(s) URL"},
		{"bad timeout env", []string{"--snapshot", snap.DBPath, "--assets", snap.AssetsDir}, map[string]string{"PAPER_MCP_ASSET_TIMEOUT": "soon"}, cmdkit.ExitUsage, "PAPER_MCP_ASSET_TIMEOUT"},
		{"negative timeout", []string{"--snapshot", snap.DBPath, "--assets", snap.AssetsDir, "--asset-timeout", "-1s"}, nil, cmdkit.ExitUsage, "--asset-timeout"},
		{"stray argument", []string{"stdio", "--snapshot", snap.DBPath, "--assets", snap.AssetsDir, "extra"}, nil, cmdkit.ExitUsage, "unexpected arguments"},
		{"bad origin", []string{"http", "--snapshot", snap.DBPath, "--assets", snap.AssetsDir, "--allowed-origins", "ftp://x"}, nil, cmdkit.ExitUsage, "allowed origin"},
		{"demo once with stdio", []string{"demo", "--once", "--stdio"}, nil, cmdkit.ExitUsage, "--once"},
		{"in-flight bytes below the minimum", []string{"--snapshot", snap.DBPath, "--assets", snap.AssetsDir, "--max-inflight-bytes", "1000"}, nil, cmdkit.ExitUsage, "--max-inflight-bytes must be at least"},
		{"in-flight bytes env not a number", []string{"demo", "--once"}, map[string]string{"PAPER_MCP_MAX_INFLIGHT_BYTES": "lots"}, cmdkit.ExitUsage, "PAPER_MCP_MAX_INFLIGHT_BYTES"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr testkit.Buffer
			code := MainContext(t.Context(), Env{Args: tc.args, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
				Getenv: func(k string) string { return tc.env[k] }})
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, tc.code, stderr.String())
			}
			if tc.err != "" && !strings.Contains(stderr.String(), tc.err) {
				t.Fatalf("stderr lacks %q:\n%s", tc.err, stderr.String())
			}
		})
	}
	t.Run("not a snapshot names the missing tables", func(t *testing.T) {
		other := filepath.Join(dir, "other.sqlite3")
		// A real SQLite database, just not a snapshot.
		writeOneTableDB(t, other)
		var stderr testkit.Buffer
		code := MainContext(t.Context(), Env{Args: []string{"--snapshot", other, "--assets", snap.AssetsDir}, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }})
		if code != cmdkit.ExitConfig || !strings.Contains(stderr.String(), "missing tables paper, paper_summary, paper_translation, paper_fts") {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	})
}

// TestHelpShowsOnlyUsedFlags: each command's --help lists the flags it uses
// and says what its own --request-timeout default is.
func TestHelpShowsOnlyUsedFlags(t *testing.T) {
	cases := []struct {
		cmd           string
		want, wantNot []string
	}{
		{"stdio", []string{"-snapshot", "-assets", "-asset-timeout", "-max-inflight-bytes"}, []string{"-request-timeout"}},
		{"http", []string{"-snapshot", "-asset-timeout", "(0: 60s)", "-max-inflight-bytes", "without a bearer"}, []string{"--rs-timeout", "call budget"}},
		{"demo", []string{"-dir", "-once", "(0: 60s)", "-max-inflight-bytes", "without a bearer"}, []string{"-asset-timeout", "-assets", "  -snapshot", "--rs-timeout"}},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			var stdout, stderr testkit.Buffer
			code := MainContext(t.Context(), Env{Args: []string{tc.cmd, "--help"}, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
				Getenv: func(string) string { return "" }})
			help := stdout.String() + stderr.String()
			if code != cmdkit.ExitOK {
				t.Fatalf("exit %d:\n%s", code, help)
			}
			for _, w := range tc.want {
				if !strings.Contains(help, w) {
					t.Errorf("help lacks %q:\n%s", w, help)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(help, w) {
					t.Errorf("help shows %q:\n%s", w, help)
				}
			}
		})
	}
}

// TestStdioCommand runs the stdio command in-process with pipes and talks
// to it with mcp-go's stdio client; stdout must carry only MCP messages.
func TestStdioCommand(t *testing.T) {
	snap := fixture(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr testkit.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- MainContext(ctx, Env{Args: []string{"--snapshot", snap.DBPath, "--assets", snap.AssetsDir}, Stdin: inR, Stdout: outW, Stderr: &stderr,
			Getenv: func(string) string { return "" }})
		outW.Close()
	}()
	c := client.NewClient(transport.NewIO(outR, inW, nil))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "stdio-test", Version: "1"}}}); err != nil {
		t.Fatalf("initialize: %v\n%s", err, stderr.String())
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get_paper_metadata", Arguments: map[string]any{"paper_id": snapshot.PaperID(snapshot.KeyViT)}}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	rr, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "paper://" + snapshot.PaperID(snapshot.KeyViT) + "/summary/deep_read"}})
	if err != nil || len(rr.Contents) != 1 {
		t.Fatalf("read: %v", err)
	}
	inW.Close()
	c.Close()
	select {
	case code := <-done:
		if code != cmdkit.ExitOK {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stdio command did not end at EOF")
	}
	if !strings.Contains(stderr.String(), "snapshot opened") {
		t.Fatalf("diagnostics did not go to stderr: %s", stderr.String())
	}
}

// TestHTTPCommandWithAssetBaseURL runs the http command itself (flags and
// all) with assets only behind an HTTP base URL.
func TestHTTPCommandWithAssetBaseURL(t *testing.T) {
	snap := fixture(t)
	assetSrv := httptest.NewServer(http.StripPrefix("/static/", http.FileServer(http.Dir(snap.AssetsDir))))
	defer assetSrv.Close()
	var stdout, stderr testkit.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- MainContext(ctx, Env{Args: []string{"http", "--snapshot", snap.DBPath, "--assets-base-url", assetSrv.URL + "/static/", "--asset-timeout", "10s", "--listen", "127.0.0.1:0"},
			Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
	}()
	defer func() {
		cancel()
		if code := <-done; code != cmdkit.ExitOK {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	}()
	// The command binds a port of its own choosing (no port picked ahead
	// and freed, which another process could take) and logs it.
	var listen string
	if !testkit.Eventually(testkit.Patience, func() bool {
		m := servingAddr.FindStringSubmatch(stderr.String())
		if m != nil {
			listen = m[1]
		}
		return m != nil
	}) {
		t.Fatalf("the http command logged no listen address:\n%s", stderr.String())
	}
	url := "http://" + listen + "/mcp"
	ready := testkit.Eventually(testkit.Patience, func() bool {
		resp, err := http.Get("http://" + listen + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !ready {
		t.Fatalf("server not ready:\n%s", stderr.String())
	}
	var out strings.Builder
	if err := runJourney(ctx, &out, url, ""); err != nil {
		t.Fatalf("journey: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(out.String(), `"template_tag`) && !strings.Contains(out.String(), "paper_title") {
		t.Fatalf("summary not fetched through the base URL:\n%s", out.String())
	}
	if stdout.String() != "" {
		t.Fatalf("the http command wrote to stdout: %q", stdout.String())
	}
}

func TestDemoOnce(t *testing.T) {
	var stdout, stderr testkit.Buffer
	dir := t.TempDir()
	for run := range 2 { // the second run reuses the snapshot in --dir
		stdout = testkit.Buffer{}
		code := MainContext(t.Context(), Env{Args: []string{"demo", "--once", "--listen", "127.0.0.1:0", "--dir", dir}, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
			Getenv: func(string) string { return "" }})
		if code != cmdkit.ExitOK {
			t.Fatalf("run %d: exit %d\n%s\n%s", run, code, stdout.String(), stderr.String())
		}
		for _, want := range []string{"MCP over HTTP:  http://127.0.0.1:", "claude mcp add --transport http papers", "$ search_papers query=vision transformer",
			"**vision", "available_summary_templates", "[truncated: showing the first 500", "本文提出一种基于**视觉变换器**", "1. alice zhang (9)", "$ resources/read paper://", "（中文译文）"} {
			if !strings.Contains(stdout.String(), want) {
				t.Fatalf("run %d: demo output lacks %q:\n%s", run, want, stdout.String())
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "snapshot", snapshot.DBFile)); err != nil {
		t.Fatalf("--dir snapshot not kept: %v", err)
	}
}

// TestAllowedHosts: the paper server answers 421 to a Host it does not
// serve (DNS rebinding, a misrouted proxy) and keeps probes open.
func TestAllowedHosts(t *testing.T) {
	url := startHTTP(t, httpFlags{HTTPFlags: cmdkit.HTTPFlags{HTTPConfig: srvtransport.HTTPConfig{PublicBaseURL: "https://papers.example"}}})
	for _, tc := range []struct {
		path, host string
		want       int
	}{
		{"/mcp", "evil.example", http.StatusMisdirectedRequest},
		{"/mcp", "papers.example", http.StatusOK},
		{"/mcp", "localhost", http.StatusOK},
		{"/healthz", "10.0.0.7:8080", http.StatusOK},
	} {
		method, body := http.MethodPost, toolsListBody
		if tc.path != "/mcp" {
			method, body = http.MethodGet, ""
		}
		req, _ := http.NewRequest(method, strings.TrimSuffix(url, "/mcp")+tc.path, strings.NewReader(body))
		req.Host = tc.host
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s with Host %s: status %d, want %d", tc.path, tc.host, resp.StatusCode, tc.want)
		}
	}
}

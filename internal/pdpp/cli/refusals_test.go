package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/tokencheck"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// outOfScope is a read the demo client grant refuses: it names the notes
// connection, which holds no videos stream (401 context.stream_not_allowed,
// as the reference RS answers).
var outOfScope = map[string]any{"stream": "videos", "connection_id": "cin_demo_notes"}

// hookURL is a public-looking callback whose name never resolves (RFC 2606).
const hookURL = "https://hooks.invalid/pdpp-refusal-test"

// scopeCase is one out-of-scope call and what its refusal must name.
type scopeCase struct {
	name  string
	tool  string
	args  map[string]any
	code  string
	names []string
}

var scopeCases = []scopeCase{
	{"stream outside the grant", "query_records", outOfScope, "context.stream_not_allowed",
		[]string{`stream "videos"`, `connection_id "cin_demo_notes"`}},
	{"connection outside the grant", "query_records", map[string]any{"stream": "transcripts", "connection_id": "cin_demo_elsewhere"}, "context.instance_mismatch",
		[]string{`stream "transcripts"`, `connection_id "cin_demo_elsewhere"`}},
	{"record under a connection without that stream", "fetch", map[string]any{"id": "cin_demo_notes/videos:vid-1"}, "context.stream_not_allowed",
		[]string{`record "cin_demo_notes/videos:vid-1"`, `stream "videos"`, `connection_id "cin_demo_notes"`}},
}

// checkScopeRefusal: a scope refusal is a tool error carrying the RS code,
// naming what the call asked for, and saying the token itself is fine.
func checkScopeRefusal(t *testing.T, isError bool, text string, structured any, tc scopeCase) {
	t.Helper()
	if !isError {
		t.Fatalf("not a tool error:\n%s", text)
	}
	if code := errorCode(structured); code != tc.code {
		t.Errorf("structured error code %q, want %q", code, tc.code)
	}
	for _, want := range append([]string{"error " + tc.code, "outside the grant", "token itself is fine", "call schema"}, tc.names...) {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "pdpp connect") {
		t.Errorf("a scope refusal tells the user to renew the token:\n%s", text)
	}
}

// errorCode is structuredContent.error.code of a tool result.
func errorCode(structured any) string {
	b, _ := json.Marshal(structured)
	var s struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &s)
	return s.Error.Code
}

// rpcAnswer is one JSON-RPC answer of the hosted server.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError           bool `json:"isError"`
		Content           []struct{ Text string }
		StructuredContent map[string]any `json:"structuredContent"`
	} `json:"result"`
	Error *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

func (a rpcAnswer) text() string {
	if a.Result == nil || len(a.Result.Content) == 0 {
		return ""
	}
	return a.Result.Content[0].Text
}

// allToolsHTTP serves the PDPP server over HTTP with every toolset and
// metrics on; it returns the /mcp and /metrics URLs.
func allToolsHTTP(t *testing.T, provider string) (string, string) {
	t.Helper()
	h := httpFlags{
		common:    common{providerURL: provider, serverName: "pdpp", toolsets: strings.Join(mcptools.Toolsets(), ","), rsTimeout: 10 * time.Second},
		HTTPFlags: cmdkit.HTTPFlags{HTTPConfig: transport.HTTPConfig{Listen: "127.0.0.1:0", MaxBodyBytes: 1 << 20}, MetricsListen: "127.0.0.1:0"},
	}
	addr, metricsAddr := serveForTest(t, context.Background(), slog.New(slog.DiscardHandler), &h)
	return "http://" + addr.String() + "/mcp", "http://" + metricsAddr.String() + "/metrics"
}

// TestScopeRefusalOverHTTP: with a valid grant, a read outside it is a tool
// error over HTTP (status 200, no challenge), alone and in a batch where a
// created subscription's secret still reaches the client; a resources/read
// outside the grant is -32002 with the typed error as data; the bearer's
// verdict stays cached, and mcp_auth_refusals_total{reason="invalid_token"}
// counts none of it.
func TestScopeRefusalOverHTTP(t *testing.T) {
	rs := newFaultRS(t)
	mcpURL, metricsURL := allToolsHTTP(t, rs.url)
	tok := fixedTokens["client"]
	if resp, b := mcpPost(t, mcpURL, tok, "2025-06-18", listBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, b)
	}

	for i, tc := range scopeCases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := mcpPost(t, mcpURL, tok, "2025-06-18", toolCall(10+i, tc.tool, tc.args))
			if resp.StatusCode != http.StatusOK || resp.Header.Get("WWW-Authenticate") != "" {
				t.Fatalf("status %d, challenge %q: %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b)
			}
			var a rpcAnswer
			if err := json.Unmarshal([]byte(b), &a); err != nil || a.Result == nil {
				t.Fatalf("not a tool result: %s", b)
			}
			checkScopeRefusal(t, a.Result.IsError, a.text(), a.Result.StructuredContent, tc)
		})
	}

	t.Run("batch with create_event_subscription", func(t *testing.T) {
		batch := "[" + toolCall(1, "create_event_subscription", map[string]any{"callback_url": hookURL}) + "," +
			toolCall(2, "query_records", outOfScope) + "]"
		resp, b := mcpPost(t, mcpURL, tok, "", batch)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var answers []rpcAnswer
		if err := json.Unmarshal([]byte(b), &answers); err != nil || len(answers) != 2 {
			t.Fatalf("want two answers: %s", b)
		}
		byID := map[string]rpcAnswer{}
		for _, a := range answers {
			byID[string(a.ID)] = a
		}
		created := byID["1"]
		if created.Result == nil || created.Result.IsError {
			t.Fatalf("create: %s", b)
		}
		if secret, _ := created.Result.StructuredContent["secret"].(string); secret == "" {
			t.Fatalf("the create reply lost its signing secret: %s", b)
		}
		refused := byID["2"]
		if refused.Result == nil {
			t.Fatalf("the out-of-scope read was not answered: %s", b)
		}
		checkScopeRefusal(t, refused.Result.IsError, refused.text(), refused.Result.StructuredContent, scopeCases[0])
	})

	t.Run("resources/read outside the grant", func(t *testing.T) {
		for _, rc := range []struct{ token, uri string }{
			{fixedTokens["narrow"], "pdpp://stream/videos"}, // the narrow grant holds transcripts only
			{tok, "pdpp://stream/nope"},
		} {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":%q}}`, rc.uri)
			resp, b := mcpPost(t, mcpURL, rc.token, "2025-06-18", body)
			var a rpcAnswer
			if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(b), &a) != nil || a.Error == nil {
				t.Fatalf("%s: status %d: %s", rc.uri, resp.StatusCode, b)
			}
			if a.Error.Code != mcp.RESOURCE_NOT_FOUND || a.Error.Data["code"] != "context.stream_not_allowed" {
				t.Fatalf("%s: want -32002 with the typed error as data, got %s", rc.uri, b)
			}
		}
	})

	// None of this touched the bearer's verdict: the next request reads
	// nothing from the RS.
	rs.take()
	if resp, b := mcpPost(t, mcpURL, tok, "2025-06-18", listBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list after the refusals: %d %s", resp.StatusCode, b)
	}
	if p := rs.take(); len(p) != 0 {
		t.Fatalf("a scope refusal evicted the verdict: %v", p)
	}

	fams := testkit.Scrape(t, metricsURL)
	if n, _ := testkit.Sample(fams, metrics.NameAuthRefusals, map[string]string{"reason": "invalid_token"}); n != 0 {
		t.Fatalf("scope refusals counted as %v invalid_token refusals", n)
	}
	// The counter does count a real token rejection.
	if resp, _ := mcpPost(t, mcpURL, "wrongtoken", "2025-06-18", listBody); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: status %d", resp.StatusCode)
	}
	fams = testkit.Scrape(t, metricsURL)
	if n, _ := testkit.Sample(fams, metrics.NameAuthRefusals, map[string]string{"reason": "invalid_token"}); n != 1 {
		t.Fatalf("invalid_token refusals = %v after one rejected token, want 1", n)
	}
}

// TestScopeRefusalOverStdio: the same refusals over stdio with the official
// SDK client, one call at a time and with a create_event_subscription in
// flight beside an out-of-scope read (stdio has no batches: both are
// answered), and a resources/read outside the grant is -32002.
func TestScopeRefusalOverStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connectStdio(t, ctx, demoRS(t), "2025-06-18")
	textOf := func(res *sdk.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	for _, tc := range scopeCases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			checkScopeRefusal(t, res.IsError, textOf(res), res.StructuredContent, tc)
		})
	}
	t.Run("create_event_subscription beside an out-of-scope read", func(t *testing.T) {
		var wg sync.WaitGroup
		var created, refused *sdk.CallToolResult
		var errCreate, errRead error
		wg.Go(func() {
			created, errCreate = cs.CallTool(ctx, &sdk.CallToolParams{Name: "create_event_subscription", Arguments: map[string]any{"callback_url": hookURL}})
		})
		wg.Go(func() {
			refused, errRead = cs.CallTool(ctx, &sdk.CallToolParams{Name: "query_records", Arguments: outOfScope})
		})
		wg.Wait()
		if errCreate != nil || errRead != nil {
			t.Fatalf("create: %v; read: %v", errCreate, errRead)
		}
		if created.IsError {
			t.Fatalf("create: %s", textOf(created))
		}
		b, _ := json.Marshal(created.StructuredContent)
		var s struct{ Secret string }
		if json.Unmarshal(b, &s) != nil || s.Secret == "" {
			t.Fatalf("the create reply has no signing secret: %s", b)
		}
		checkScopeRefusal(t, refused.IsError, textOf(refused), refused.StructuredContent, scopeCases[0])
	})
	t.Run("resources/read outside the grant", func(t *testing.T) {
		_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "pdpp://stream/nope"})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != mcp.RESOURCE_NOT_FOUND || !strings.Contains(string(we.Data), `"context.stream_not_allowed"`) {
			t.Fatalf("want -32002 with the typed error as data, got %v", err)
		}
	})
}

// Sample-shaped answers of the reference RS for tokens that are no good, or
// never good here.
const (
	grantExpired = `{"error":{"type":"permission_error","code":"grant_expired","message":"Grant has expired"}}`
	grantRevoked = `{"error":{"type":"permission_error","code":"grant_revoked","message":"Grant has been revoked"}}`
	unknownSrc   = `{"error":{"type":"not_found_error","code":"not_found","message":"Unknown source: unknown"}}`
	forbiddenAll = `{"error":{"type":"permission_error","code":"forbidden","message":"This token may not read here"}}`
)

// lifecycleRS is the demo RS behind a proxy that answers every request of
// some tokens as the reference RS answers expired, revoked and package
// tokens, and can revoke the demo client token at any moment.
type lifecycleRS struct {
	*faultRS
	revoked atomic.Bool // the demo client token now gets 403 grant_revoked
}

func newLifecycleRS(t *testing.T) *lifecycleRS {
	l := &lifecycleRS{faultRS: newFaultRS(t)}
	l.set(func(w http.ResponseWriter, r *http.Request) bool {
		status, body := 0, ""
		switch r.Header.Get("Authorization") {
		case "Bearer tok-expired":
			status, body = http.StatusForbidden, grantExpired
		case "Bearer tok-revoked":
			status, body = http.StatusForbidden, grantRevoked
		case "Bearer tok-package":
			status, body = http.StatusNotFound, unknownSrc
		case "Bearer tok-forbidden":
			status, body = http.StatusForbidden, forbiddenAll
		case "Bearer " + fixedTokens["client"]:
			if l.revoked.Load() {
				status, body = http.StatusForbidden, grantRevoked
			}
		}
		if status == 0 {
			return false
		}
		return failWith(status, body, func(*http.Request) bool { return true })(w, r)
	})
	return l
}

// TestTokenLifecycleOverHTTP: a token the RS says is expired or revoked
// (403 grant_expired / grant_revoked) gets 401 with the invalid_token
// challenge, at the check and on a call whose verdict was cached (which
// evicts it); a token that can never read here (a package token's 404
// "Unknown source", a 403 on the schema) gets an explained 403, never a
// 503; no data request is made for any of them.
func TestTokenLifecycleOverHTTP(t *testing.T) {
	rs := newLifecycleRS(t)
	mcpURL := startHTTP(t, rs.url)
	requests := []struct{ name, version, body string }{
		{"initialize", "2025-06-18", initBody}, {"tools/list", "2025-06-18", listBody},
		{"fetch", "2025-06-18", fetchBody}, {"batch", "", batchBody},
	}
	for _, tc := range []struct {
		token    string
		status   int
		remember bool     // the verdict is kept: a second request reads nothing
		inBody   []string // in the reply body
	}{
		{"tok-expired", http.StatusUnauthorized, true, []string{`"invalid_token"`}},
		{"tok-revoked", http.StatusUnauthorized, true, []string{`"invalid_token"`}},
		{"tok-package", http.StatusForbidden, false, []string{`"reason":"client_grant_required"`, `"rs_status":404`, `"rs_code":"not_found"`, "Unknown source: unknown", "single-source client grant", "pdpp connect"}},
		{"tok-forbidden", http.StatusForbidden, false, []string{`"reason":"client_grant_required"`, `"rs_status":403`, "single-source client grant"}},
	} {
		for _, req := range requests {
			t.Run(tc.token+" "+req.name, func(t *testing.T) {
				rs.take()
				resp, b := mcpPost(t, mcpURL, tc.token, req.version, req.body)
				if resp.StatusCode != tc.status || resp.Header.Get("Retry-After") != "" {
					t.Fatalf("status %d (want %d), Retry-After %q: %s", resp.StatusCode, tc.status, resp.Header.Get("Retry-After"), b)
				}
				for _, want := range tc.inBody {
					if !strings.Contains(b, want) {
						t.Errorf("reply lacks %s: %s", want, b)
					}
				}
				ch := resp.Header.Get("WWW-Authenticate")
				if tc.status == http.StatusUnauthorized {
					if !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, `resource_metadata="http://127.0.0.1:`) || strings.Contains(ch, "scope=") {
						t.Errorf("challenge: %q", ch)
					}
				} else if ch != "" {
					t.Errorf("a 403 carries a challenge: %q", ch)
				}
				onlySchemaReads(t, rs.take())
				resp, _ = mcpPost(t, mcpURL, tc.token, req.version, req.body)
				if resp.StatusCode != tc.status {
					t.Fatalf("again: status %d", resp.StatusCode)
				}
				if read := len(rs.take()) > 0; read == tc.remember {
					t.Errorf("second request read the RS = %v, want %v", read, !tc.remember)
				}
			})
		}
	}

	t.Run("grant revoked after its verdict was cached", func(t *testing.T) {
		defer rs.revoked.Store(false)
		tok := fixedTokens["client"]
		if resp, b := mcpPost(t, mcpURL, tok, "2025-06-18", listBody); resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/list: %d %s", resp.StatusCode, b)
		}
		rs.revoked.Store(true)
		// Served from the cached verdict: tools/list reads nothing.
		if resp, _ := mcpPost(t, mcpURL, tok, "2025-06-18", listBody); resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/list from the cached verdict: %d", resp.StatusCode)
		}
		rs.take()
		resp, b := mcpPost(t, mcpURL, tok, "2025-06-18", fetchBody)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("fetch with a revoked grant: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b)
		}
		rs.take()
		// The verdict was evicted: the next request asks the RS, which
		// says revoked, and that is remembered.
		if resp, _ := mcpPost(t, mcpURL, tok, "2025-06-18", listBody); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("tools/list after the revocation: %d", resp.StatusCode)
		}
		if p := rs.take(); len(p) == 0 || p[0] != "/v1/schema" {
			t.Fatalf("after the revocation the verdict must be read again: %v", p)
		}
		if resp, _ := mcpPost(t, mcpURL, tok, "2025-06-18", listBody); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("third request: %d", resp.StatusCode)
		}
		if p := rs.take(); len(p) != 0 {
			t.Fatalf("the revoked verdict was not remembered: %v", p)
		}
	})

	t.Run("an OAuth-capable client is told to authorize again", func(t *testing.T) {
		mcpURL := startHTTP(t, rs.url) // a fresh server: no verdict cached
		defer rs.revoked.Store(false)
		c, err := client.NewStreamableHttpClient(mcpURL, mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + fixedTokens["client"]}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := startSession(t.Context(), c, mcp.LATEST_PROTOCOL_VERSION, "lifecycle-test"); err != nil {
			t.Fatal(err)
		}
		rs.revoked.Store(true)
		req := mcp.CallToolRequest{}
		req.Params.Name = "fetch"
		req.Params.Arguments = map[string]any{"id": "cin_demo_loom_main/transcripts:tr-5"}
		_, err = c.CallTool(t.Context(), req)
		var ae *mcptransport.AuthorizationRequiredError
		if !errors.As(err, &ae) || !strings.HasSuffix(ae.ResourceMetadataURL, "/.well-known/oauth-protected-resource/mcp") {
			t.Fatalf("want an authorization-required error with the metadata URL, got %v", err)
		}
	})
}

// TestTokenLifecycleOverStdio: over stdio the same answers are tool errors
// that say how to renew the cached credential (pdpp connect), or what grant
// this server needs.
func TestTokenLifecycleOverStdio(t *testing.T) {
	rs := newLifecycleRS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	textOf := func(res *sdk.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	fetch := &sdk.CallToolParams{Name: "fetch", Arguments: map[string]any{"id": "cin_demo_loom_main/transcripts:tr-5"}}
	renew := []string{"renew the cached credential", `run "pdpp connect <provider-url>" again`}
	for _, tc := range []struct {
		token, code string
		inText      []string
	}{
		{"tok-expired", "grant_expired", renew},
		{"tok-revoked", "grant_revoked", renew},
		{"tok-package", tokencheck.CodeClientGrantRequired, []string{"Unknown source: unknown", "single-source client grant", "pdpp connect"}},
	} {
		t.Run(tc.token, func(t *testing.T) {
			cs := connectStdioAs(t, ctx, rs.url, "2025-06-18", tc.token)
			res, err := cs.CallTool(ctx, fetch)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || errorCode(res.StructuredContent) != tc.code {
				t.Fatalf("want a %s tool error, got:\n%s", tc.code, textOf(res))
			}
			for _, want := range tc.inText {
				if !strings.Contains(textOf(res), want) {
					t.Errorf("text lacks %q:\n%s", want, textOf(res))
				}
			}
			onlySchemaReads(t, rs.take())
		})
	}
	t.Run("grant revoked during the session", func(t *testing.T) {
		defer rs.revoked.Store(false)
		cs := connectStdioAs(t, ctx, rs.url, "2025-06-18", fixedTokens["client"])
		if res, err := cs.CallTool(ctx, fetch); err != nil || res.IsError {
			t.Fatalf("fetch: %v %v", err, res)
		}
		rs.revoked.Store(true)
		res, err := cs.CallTool(ctx, fetch)
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || errorCode(res.StructuredContent) != "grant_revoked" || !strings.Contains(textOf(res), renew[1]) {
			t.Fatalf("want grant_revoked saying how to renew, got:\n%s", textOf(res))
		}
	})
}

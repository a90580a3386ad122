package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/demoas"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/credentials"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
)

// demoOAuth are the flags of the demo authorization server, served beside the
// demo RS by demo and demo-rs (never by the adapter's own commands).
type demoOAuth struct {
	autoConsent  bool
	loopbackCIMD bool
	tokenTTL     time.Duration
}

func (o *demoOAuth) register(f *cmdkit.FlagSet) error {
	f.BoolVar(&o.autoConsent, "auto-consent", false, "demo authorization server: approve every authorization at once and redirect straight back to the client (no consent page)")
	f.BoolVar(&o.loopbackCIMD, strings.TrimPrefix(demoas.LoopbackDocumentsFlag, "--"), false, "demo authorization server: fetch client metadata documents from loopback hosts too (https, certificate not checked), to try a CIMD client on this machine")
	return f.Dur(&o.tokenTTL, "access-token-ttl", "PDPP_DEMO_ACCESS_TOKEN_TTL", demoas.DefaultAccessTokenTTL, "demo authorization server: lifetime of an access token")
}

func (o *demoOAuth) config() (*demors.OAuthConfig, error) {
	if o.tokenTTL < time.Second {
		return nil, cmdkit.Fail(cmdkit.ExitUsage, "--access-token-ttl must be at least 1s, not %v", o.tokenTTL)
	}
	return &demors.OAuthConfig{AccessTokenTTL: o.tokenTTL, AutoConsent: o.autoConsent, AllowLoopbackDocuments: o.loopbackCIMD}, nil
}

// consentNote says how the demo authorization server asks for consent.
func (o *demoOAuth) consentNote() string {
	if o.autoConsent {
		return "given at once (--auto-consent)"
	}
	return "a page in the browser"
}

// demoSource is the source the demo's facade asks grants for by default.
const demoSource = "loom"

// startDemoRS starts the embedded demo RS, with its authorization server, on
// addr (given with the command's flag addrFlag) and returns it with its URL
// (no trailing slash).
func startDemoRS(ctx context.Context, log *slog.Logger, addr, addrFlag string, o demoOAuth) (*demors.Server, string, error) {
	oauth, err := o.config()
	if err != nil {
		return nil, "", err
	}
	rs, err := demors.New(demors.Config{Logger: log, OAuth: oauth})
	if err != nil {
		return nil, "", cmdkit.Fail(cmdkit.ExitFailure, "demo RS: %v", err)
	}
	u, err := demors.ListenAndServe(ctx, addr, rs)
	if err != nil {
		rs.Close()
		return nil, "", cmdkit.Fail(cmdkit.ExitUnavailable, "%v (pick another address with %s, e.g. 127.0.0.1:0)", err, addrFlag)
	}
	return rs, strings.TrimRight(u, "/"), nil
}

// writeDemoCredential writes the demo grant's token where stdio mode reads it.
func writeDemoCredential(cacheRoot, providerURL, grant, token string) (string, error) {
	path, err := credentials.Write(cacheRoot, credentials.File{
		ProviderURL: providerURL,
		Scope:       "demo:" + grant,
		CreatedAt:   time.Now().UTC().Format(time.RFC3339),
		Credential: credentials.Credential{
			AccessToken: token,
			TokenType:   "Bearer",
			GrantID:     "demo_" + grant,
			Scope:       "demo:" + grant,
		},
	})
	if err != nil {
		return "", cmdkit.Fail(cmdkit.ExitFailure, "writing the demo credential: %v", err)
	}
	return path, nil
}

func runDemoRS(ctx context.Context, env Env, log *slog.Logger, args []string) error {
	var listen, cacheRoot, grant string
	var o demoOAuth
	f := cmdkit.NewFlagSet(env, "pdpp-mcp-server", "demo-rs", "demo-rs [--listen 127.0.0.1:7663] [--cache-root DIR] [--grant client|narrow] [--auto-consent]")
	f.Str(&listen, "listen", "PDPP_DEMO_RS_LISTEN", "127.0.0.1:7663", "`address` of the demo RS")
	f.Str(&cacheRoot, "cache-root", "PDPP_CACHE_ROOT", credentials.DefaultCacheRoot, "credential cache `directory` to write the demo client credential into")
	f.Str(&grant, "grant", "", "client", "demo `grant` to hand out: client (every stream of all three connections) or narrow (one stream, some fields)")
	if err := o.register(f); err != nil {
		return err
	}
	if err := f.Parse(args); err != nil {
		return err
	}
	if grant != "client" && grant != "narrow" {
		return cmdkit.Fail(cmdkit.ExitUsage, "--grant must be client or narrow, not %q", grant)
	}
	rs, url, err := startDemoRS(ctx, log, listen, "--listen", o)
	if err != nil {
		return err
	}
	defer rs.Close()
	path, err := writeDemoCredential(cacheRoot, url, grant, rs.Token(grant))
	if err != nil {
		return err
	}
	cimdNote := "" // whether client metadata documents may come from this machine
	if o.loopbackCIMD {
		cimdNote = "\nClient metadata documents may be served from this machine (" + demoas.LoopbackDocumentsFlag + ")."
	}
	fmt.Fprintf(env.Stdout, `demo RS listening on %s
client credential (%s grant) written to %s

In another terminal:
  pdpp-mcp-server --provider-url %s --cache-root %s

Over HTTP, serve MCP for this demo RS with
  pdpp-mcp-server http --provider-url %s
and give each client http://127.0.0.1:8787/mcp with the header
  Authorization: Bearer %s
(the %s grant's token), e.g. %s --cli http://127.0.0.1:8787/mcp --transport http --header "Authorization: Bearer %s" --method tools/list

OAuth clients: the demo authorization server is served at the same address
(consent: %s; access tokens live %v). Serve MCP with
  pdpp-mcp-server http --provider-url %s --oauth-source %s
and give the client only http://127.0.0.1:8787/mcp, no token.%s

Ctrl-C stops the demo RS.
`, url, grant, path, url, cacheRoot, url, rs.Token(grant), grant, inspectorNPX, rs.Token(grant), o.consentNote(), o.tokenTTL, url, demoSource, cimdNote)
	<-ctx.Done()
	return nil
}

func runDemo(ctx context.Context, env Env, log *slog.Logger, args []string) error {
	var h httpFlags
	var rsListen string
	var once bool
	var o demoOAuth
	f := cmdkit.NewFlagSet(env, "pdpp-mcp-server", "demo", "demo [--listen 127.0.0.1:8787] [--rs-listen 127.0.0.1:0] [--auto-consent] [--once]")
	// The demo serves its own embedded RS, so --provider-url (and the
	// provider's authorization servers) do not apply. Its webhook receivers
	// run on this machine, so private callbacks are allowed by default.
	if err := h.registerServing(f, true); err != nil {
		return err
	}
	if err := h.registerHosted(f); err != nil {
		return err
	}
	f.Str(&rsListen, "rs-listen", "PDPP_DEMO_RS_LISTEN", "127.0.0.1:0", "`address` of the embedded demo RS")
	f.BoolVar(&once, "once", false, "run the sample journey and exit instead of serving until Ctrl-C")
	h.registerOAuthSource(f, demoSource)
	if err := o.register(f); err != nil {
		return err
	}
	if err := f.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rs, rsURL, err := startDemoRS(ctx, log, rsListen, "--rs-listen", o)
	if err != nil {
		return err
	}
	defer rs.Close()
	cacheRoot, err := os.MkdirTemp("", "pdpp-mcp-demo-")
	if err != nil {
		return cmdkit.Fail(cmdkit.ExitFailure, "%v", err)
	}
	defer os.RemoveAll(cacheRoot)
	if _, err := writeDemoCredential(cacheRoot, rsURL, "client", rs.Token("client")); err != nil {
		return err
	}
	h.providerURL = rsURL
	if h.Origins == "" {
		// Let MCP Inspector's browser UI (default port 6274) connect directly.
		h.Origins, h.CORS = inspectorOrigins, true
	}
	h.MetricsListen = cmp.Or(h.MetricsListen, "127.0.0.1:0") // metrics are on in the demo
	bound, metricsAt := make(chan net.Addr, 1), make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- serveHTTP(ctx, log, &h, func(a net.Addr) { bound <- a }, func(a net.Addr) { metricsAt <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-bound:
	case err := <-served:
		return err
	}
	mcpURL := "http://" + addr.String() + "/mcp"
	token := rs.Token("client")
	if once {
		// The settings below would die with this command: only the journey.
		fmt.Fprintf(env.Stdout, "pdpp-mcp demo --once: the sample journey against %s (run without --once for a demo that keeps serving and says how to connect clients)\n\n", mcpURL)
	} else {
		printDemoConfig(env.Stdout, rsURL, mcpURL, token, cacheRoot)
		printDemoOAuth(env.Stdout, rsURL, mcpURL, h.oauthSource, o)
		// The metrics listener is bound before the MCP one: its address
		// is already known.
		select {
		case a := <-metricsAt:
			fmt.Fprintf(env.Stdout, "Prometheus metrics: http://%s/metrics\n\n", a)
		default:
		}
	}
	if err := runJourney(ctx, env.Stdout, mcpURL, token); err != nil {
		return cmdkit.Fail(cmdkit.ExitFailure, "sample journey: %v", err)
	}
	return cmdkit.FinishServing(ctx, env.Stdout, once, cancel, served)
}

// inspectorNPX runs MCP Inspector with the major version the printed
// commands need: without it, npx on a Node older than Inspector 2 asks for
// resolves Inspector 0.x, whose CLI refuses arguments for a URL server.
const inspectorNPX = "npx -y @modelcontextprotocol/inspector@2"

// inspectorOrigins are the origins of MCP Inspector's web UI on its default
// port, allowed (with CORS) by the demo unless --allowed-origins says otherwise.
const inspectorOrigins = "http://localhost:6274,http://127.0.0.1:6274"

func printDemoConfig(w io.Writer, rsURL, mcpURL, token, cacheRoot string) {
	stdio, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"pdpp-demo": map[string]any{
		"command": "pdpp-mcp-server",
		"args":    []string{"--provider-url", rsURL, "--cache-root", cacheRoot},
	}}}, "", "  ")
	fmt.Fprintf(w, `pdpp-mcp demo
  demo RS:        %s
  MCP over HTTP:  %s
  bearer token:   %s   (demo "client" grant: two loom connections + notes)

MCP Inspector 2 (Node 22.19 or newer; without the @2, npx on an older Node
fetches Inspector 0.x, whose CLI stops with "Arguments cannot be passed to a
URL-based MCP server"; its web UI origin on port 6274 is allowed): in the web UI
(%s), transport "Streamable HTTP", URL %s, header
Authorization: Bearer %s; or its CLI:
  %s --cli %s --transport http --header "Authorization: Bearer %s" --method tools/list

Claude Code:
  claude mcp add --transport http pdpp-demo %s --header "Authorization: Bearer %s"

Claude Desktop (stdio; needs pdpp-mcp-server on PATH: go install ./cmd/pdpp-mcp-server):
%s

These settings last only while this demo runs: the demo RS port, the token
and the credential folder %s vanish when it exits. For a
configuration that lasts, run "pdpp-mcp-server demo-rs --cache-root <dir>" (fixed
port 7663) and point clients at it as that command prints.

`, rsURL, mcpURL, token, inspectorNPX, mcpURL, token, inspectorNPX, mcpURL, token, mcpURL, token, stdio, cacheRoot)
}

// printDemoOAuth says how an OAuth client connects with the URL alone.
func printDemoOAuth(w io.Writer, rsURL, mcpURL, source string, o demoOAuth) {
	if source == "" {
		fmt.Fprintf(w, `OAuth: the facade is off (--oauth-source is empty), so an OAuth client that
names no source gets a package token, which the demo RS refuses on /v1.

`)
		return
	}
	fmt.Fprintf(w, `MCP Inspector through OAuth, no token pasted: in the web UI, transport
"Streamable HTTP", URL %s, no Authorization header, then Connect. It
finds the authorization server in this server's metadata, registers at the
demo authorization server (%s) and gets a client grant over one source
(%q) after consent: %s. Access tokens live %v; refresh tokens rotate.

`, mcpURL, rsURL, source, o.consentNote(), o.tokenTTL)
}

// runJourney shows the evidence ladder against a running /mcp endpoint, as an
// MCP client sees it: search, then the read the first hit offers, then fetch.
func runJourney(ctx context.Context, w io.Writer, mcpURL, token string) error {
	c, err := client.NewStreamableHttpClient(mcpURL, mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := startSession(ctx, c, mcp.LATEST_PROTOCOL_VERSION, "pdpp-mcp-demo"); err != nil {
		return err
	}
	fmt.Fprintf(w, "Sample journey through %s\n", mcpURL)
	res, err := callAndShow(ctx, w, c, "search", map[string]any{"q": "zephyrmarker", "limit": 5})
	if err != nil {
		return err
	}
	var out struct {
		Results []struct {
			ID               string                `json:"id"`
			Next             evidence.Continuation `json:"next"`
			EvidenceComplete *bool                 `json:"evidence_complete"`
		} `json:"results"`
	}
	if err := remarshal(res.StructuredContent, &out); err != nil || len(out.Results) == 0 {
		return fmt.Errorf("search returned no results to continue from")
	}
	// Read on from the first proven excerpt that is not the whole field (or
	// else the first proven one), then fetch the first hit.
	pick := -1
	for i, r := range out.Results {
		if r.Next.Tool != evidence.ToolReadField {
			continue
		}
		if pick < 0 || (r.EvidenceComplete != nil && !*r.EvidenceComplete) {
			pick = i
		}
		if r.EvidenceComplete != nil && !*r.EvidenceComplete {
			break
		}
	}
	if pick >= 0 {
		next := out.Results[pick].Next
		if _, err := callAndShow(ctx, w, c, next.Tool, next.Arguments); err != nil {
			return err
		}
	}
	_, err = callAndShow(ctx, w, c, "fetch", map[string]any{"id": out.Results[0].ID})
	return err
}

// startSession starts c and runs the MCP handshake at protocol revision
// protocol, introducing the client as name (at this program's version).
func startSession(ctx context.Context, c *client.Client, protocol, name string) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	_, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: protocol, ClientInfo: mcp.Implementation{Name: name, Version: version()}}})
	return err
}

func callAndShow(ctx context.Context, w io.Writer, c *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}}
	fmt.Fprintf(w, "\n$ %s\n", evidence.Continuation{Tool: tool, Arguments: args}.Call())
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(w, textOf(res))
	if res.IsError {
		return res, fmt.Errorf("%s failed", tool)
	}
	return res, nil
}

// textOf is the text of a result as printed: any character a person
// cannot see that reached it is shown as a marker (package unseen).
func textOf(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			s += t.Text
		}
	}
	return unseen.Show(s)
}

func remarshal(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/credentials"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
)

// startDemoRS starts the embedded demo RS on addr and returns it with its URL
// (no trailing slash).
func startDemoRS(ctx context.Context, log *slog.Logger, addr string) (*demors.Server, string, error) {
	rs, err := demors.New(demors.Config{Logger: log})
	if err != nil {
		return nil, "", cmdkit.Fail(cmdkit.ExitFailure, "demo RS: %v", err)
	}
	u, err := demors.ListenAndServe(ctx, addr, rs)
	if err != nil {
		rs.Close()
		return nil, "", cmdkit.Fail(cmdkit.ExitUnavailable, "%v (pick another address with --rs-listen / --listen, e.g. 127.0.0.1:0)", err)
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
	f := cmdkit.NewFlagSet(env, "pdpp-mcp-server", "demo-rs", "demo-rs [--listen 127.0.0.1:7663] [--cache-root DIR] [--grant client|narrow]")
	f.Str(&listen, "listen", "PDPP_DEMO_RS_LISTEN", "127.0.0.1:7663", "`address` of the demo RS")
	f.Str(&cacheRoot, "cache-root", "PDPP_CACHE_ROOT", credentials.DefaultCacheRoot, "credential cache `directory` to write the demo client credential into")
	f.Str(&grant, "grant", "", "client", "demo `grant` to hand out: client (every stream of all three connections) or narrow (one stream, some fields)")
	if err := f.Parse(args); err != nil {
		return err
	}
	if grant != "client" && grant != "narrow" {
		return cmdkit.Fail(cmdkit.ExitUsage, "--grant must be client or narrow, not %q", grant)
	}
	rs, url, err := startDemoRS(ctx, log, listen)
	if err != nil {
		return err
	}
	defer rs.Close()
	path, err := writeDemoCredential(cacheRoot, url, grant, rs.Token(grant))
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "demo RS listening on %s\nclient credential (%s grant) written to %s\n\nIn another terminal:\n  pdpp-mcp-server --provider-url %s --cache-root %s\n\nCtrl-C stops the demo RS.\n",
		url, grant, path, url, cacheRoot)
	<-ctx.Done()
	return nil
}

func runDemo(ctx context.Context, env Env, log *slog.Logger, args []string) error {
	var h httpFlags
	var rsListen string
	var once bool
	f := cmdkit.NewFlagSet(env, "pdpp-mcp-server", "demo", "demo [--listen 127.0.0.1:8787] [--rs-listen 127.0.0.1:0] [--once]")
	// The demo serves its own embedded RS, so --provider-url (and the
	// provider's authorization servers) do not apply.
	h.registerServer(f)
	if err := h.registerMemory(f); err != nil {
		return err
	}
	if err := h.registerTimeout(f); err != nil {
		return err
	}
	if err := h.registerHosted(f); err != nil {
		return err
	}
	f.Str(&rsListen, "rs-listen", "PDPP_DEMO_RS_LISTEN", "127.0.0.1:0", "`address` of the embedded demo RS")
	f.BoolVar(&once, "once", false, "run the sample journey and exit instead of serving until Ctrl-C")
	if err := f.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rs, rsURL, err := startDemoRS(ctx, log, rsListen)
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
	if h.MetricsListen == "" {
		h.MetricsListen = "127.0.0.1:0" // metrics are on in the demo
	}
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
	printDemoConfig(env.Stdout, rsURL, mcpURL, token, cacheRoot)
	printMetricsURL(env.Stdout, metricsAt)
	if err := runJourney(ctx, env.Stdout, mcpURL, token); err != nil {
		return cmdkit.Fail(cmdkit.ExitFailure, "sample journey: %v", err)
	}
	return cmdkit.FinishServing(ctx, env.Stdout, once, cancel, served)
}

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

MCP Inspector 2.x (needs Node 22 or newer; its web UI origin on port 6274 is
allowed): in the web UI (npx -y @modelcontextprotocol/inspector), transport
"Streamable HTTP", URL %s, header Authorization: Bearer %s; or its CLI:
  npx -y @modelcontextprotocol/inspector --cli %s --transport http --header "Authorization: Bearer %s" --method tools/list

Claude Code:
  claude mcp add --transport http pdpp-demo %s --header "Authorization: Bearer %s"

Claude Desktop (stdio; needs pdpp-mcp-server on PATH: go install ./cmd/pdpp-mcp-server):
%s

These settings last only while this demo runs: the demo RS port, the token
and the credential folder %s vanish when it exits. For a
configuration that lasts, run "pdpp-mcp-server demo-rs --cache-root <dir>" (fixed
port 7663) and point clients at it as that command prints.

`, rsURL, mcpURL, token, mcpURL, token, mcpURL, token, mcpURL, token, stdio, cacheRoot)
}

// printMetricsURL names the demo's metrics endpoint (the listener is bound
// before the MCP one, so its address is already known).
func printMetricsURL(w io.Writer, at <-chan net.Addr) {
	select {
	case a := <-at:
		fmt.Fprintf(w, "Prometheus metrics: http://%s/metrics\n\n", a)
	default:
	}
}

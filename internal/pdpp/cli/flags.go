package cli

import (
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/tokencheck"
)

// common holds the flags every serving command shares.
type common struct {
	providerURL string
	serverName  string
	toolsets    string
	rsTimeout   time.Duration
	rsObserve   func(method, route, status string, d time.Duration) // RS metrics hook, nil when off
	// allowPrivateWebhooks lets webhook callbacks name internal hosts
	// (--allow-private-webhooks; see pdpp.Config.AllowPrivateWebhooks).
	allowPrivateWebhooks bool
}

// register defines every common flag (the serving commands stdio and http).
func (c *common) register(f *cmdkit.FlagSet) error {
	c.registerProvider(f)
	c.registerServer(f, false)
	return c.registerTimeout(f)
}

// registerProvider defines --provider-url.
func (c *common) registerProvider(f *cmdkit.FlagSet) {
	f.Str(&c.providerURL, "provider-url", "PDPP_PROVIDER_URL", "", "PDPP resource server `URL`, e.g. http://127.0.0.1:7663")
}

// registerServer defines the flags of an MCP server offered to clients:
// --server-name, --toolsets and --allow-private-webhooks (default
// privateWebhooks, which only the demo turns on).
func (c *common) registerServer(f *cmdkit.FlagSet, privateWebhooks bool) {
	f.Str(&c.serverName, "server-name", "PDPP_MCP_SERVER_NAME", mcptools.ServerName, "server `name` reported to MCP clients")
	f.Str(&c.toolsets, "toolsets", "PDPP_MCP_TOOLSETS", strings.Join(mcptools.Toolsets(), ","), "comma-separated `list` of toolsets to expose ("+strings.Join(mcptools.Toolsets(), ", ")+")")
	const usage = "for local development: accept webhook callback URLs on loopback, private, link-local and metadata hosts (and http on loopback); off, only https to a public host is sent to the RS"
	if !privateWebhooks {
		f.Bool(&c.allowPrivateWebhooks, "allow-private-webhooks", "PDPP_MCP_ALLOW_PRIVATE_WEBHOOKS", usage)
		return
	}
	// On unless the environment turns it off.
	def := !strings.EqualFold(f.Getenv("PDPP_MCP_ALLOW_PRIVATE_WEBHOOKS"), "false")
	f.BoolVar(&c.allowPrivateWebhooks, "allow-private-webhooks", def, usage+" [PDPP_MCP_ALLOW_PRIVATE_WEBHOOKS]")
}

// registerTimeout defines --rs-timeout.
func (c *common) registerTimeout(f *cmdkit.FlagSet) error {
	return f.Dur(&c.rsTimeout, "rs-timeout", "PDPP_RS_TIMEOUT", rs.DefaultTimeout, "budget of one tool call or resource read across all of its RS requests (token check, expand check, data)")
}

// toolsetList validates --toolsets against the catalog.
func (c *common) toolsetList() ([]string, error) {
	known := map[string]bool{}
	for _, t := range mcptools.Toolsets() {
		known[t] = true
	}
	var out []string
	for _, t := range strings.Split(c.toolsets, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if !known[t] {
			return nil, cmdkit.Fail(cmdkit.ExitUsage, "unknown toolset %q in --toolsets; known: %s", t, strings.Join(mcptools.Toolsets(), ", "))
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, cmdkit.Fail(cmdkit.ExitUsage, "--toolsets names no toolset; known: %s", strings.Join(mcptools.Toolsets(), ", "))
	}
	return out, nil
}

// requireProvider checks --provider-url.
func (c *common) requireProvider() error {
	if c.providerURL == "" {
		return cmdkit.Fail(cmdkit.ExitUsage, "--provider-url (or PDPP_PROVIDER_URL) is required, e.g. --provider-url http://127.0.0.1:7663")
	}
	if _, err := rs.ParseProviderURL(c.providerURL); err != nil {
		return cmdkit.Fail(cmdkit.ExitUsage, "%v", err)
	}
	return nil
}

// buildServer wires the adapter over an RS client with the given token
// source; wire, when given, adjusts the adapter's Config.
func (c *common) buildServer(log *slog.Logger, token rs.TokenSource, wire ...func(*pdpp.Config)) (*server.MCPServer, *rs.Client, error) {
	sets, err := c.toolsetList()
	if err != nil {
		return nil, nil, err
	}
	client, err := rs.New(c.providerURL, token, rs.Options{Timeout: c.rsTimeout, Observe: c.rsObserve})
	if err != nil {
		return nil, nil, cmdkit.Fail(cmdkit.ExitUsage, "%v", err)
	}
	cfg := pdpp.Config{RS: client, Token: token, Logger: log,
		Checker:              tokencheck.New(client, token, tokencheck.Options{Timeout: c.rsTimeout}),
		AllowPrivateWebhooks: c.allowPrivateWebhooks}
	for _, w := range wire {
		w(&cfg)
	}
	a := pdpp.New(cfg)
	return pdpp.NewServer(a, pdpp.ServerOptions{Name: c.serverName, Version: version(), Toolsets: sets, CallTimeout: c.rsTimeout}), client, nil
}

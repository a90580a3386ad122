package cli

import (
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/rs"
)

// flagSet is a FlagSet whose flags take their defaults from environment
// variables, named in the help text.
type flagSet struct {
	*flag.FlagSet
	env Env
}

func newFlagSet(env Env, name, synopsis string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: pdpp-mcp-server %s\n\nFlags (environment variable in brackets):\n", synopsis)
		fs.PrintDefaults()
	}
	return &flagSet{FlagSet: fs, env: env}
}

func (f *flagSet) str(p *string, name, envName, def, usage string) {
	if v := f.env.Getenv(envName); v != "" {
		def = v
	}
	if envName != "" {
		usage += " [" + envName + "]"
	}
	f.StringVar(p, name, def, usage)
}

func (f *flagSet) dur(p *time.Duration, name, envName string, def time.Duration, usage string) error {
	if v := f.env.Getenv(envName); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fail(ExitUsage, "%s=%q is not a duration such as 30s", envName, v)
		}
		def = d
	}
	f.DurationVar(p, name, def, usage+" ["+envName+"]")
	return nil
}

func (f *flagSet) int64(p *int64, name, envName string, def int64, usage string) error {
	if v := f.env.Getenv(envName); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fail(ExitUsage, "%s=%q is not an integer", envName, v)
		}
		def = n
	}
	f.Int64Var(p, name, def, usage+" ["+envName+"]")
	return nil
}

// parse parses args; --help returns flag.ErrHelp, bad flags a usage error.
func (f *flagSet) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return fail(ExitUsage, "%v", err)
	}
	return nil
}

// common holds the flags every serving command shares.
type common struct {
	providerURL string
	serverName  string
	toolsets    string
	rsTimeout   time.Duration
}

func (c *common) register(f *flagSet) error {
	f.str(&c.providerURL, "provider-url", "PDPP_PROVIDER_URL", "", "PDPP resource server URL, e.g. http://127.0.0.1:7663")
	f.str(&c.serverName, "server-name", "PDPP_MCP_SERVER_NAME", mcptools.ServerName, "server name reported to MCP clients")
	f.str(&c.toolsets, "toolsets", "PDPP_MCP_TOOLSETS", strings.Join(mcptools.Toolsets(), ","), "comma-separated toolsets to expose ("+strings.Join(mcptools.Toolsets(), ", ")+")")
	return f.dur(&c.rsTimeout, "rs-timeout", "PDPP_RS_TIMEOUT", rs.DefaultTimeout, "timeout of one RS request")
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
			return nil, fail(ExitUsage, "unknown toolset %q in --toolsets; known: %s", t, strings.Join(mcptools.Toolsets(), ", "))
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fail(ExitUsage, "--toolsets names no toolset; known: %s", strings.Join(mcptools.Toolsets(), ", "))
	}
	return out, nil
}

// requireProvider checks --provider-url.
func (c *common) requireProvider() error {
	if c.providerURL == "" {
		return fail(ExitUsage, "--provider-url (or PDPP_PROVIDER_URL) is required, e.g. --provider-url http://127.0.0.1:7663")
	}
	if _, err := rs.ParseProviderURL(c.providerURL); err != nil {
		return fail(ExitUsage, "%v", err)
	}
	return nil
}

// buildServer wires the adapter over an RS client with the given token source.
func (c *common) buildServer(log *slog.Logger, token rs.TokenSource) (*server.MCPServer, *rs.Client, error) {
	sets, err := c.toolsetList()
	if err != nil {
		return nil, nil, err
	}
	client, err := rs.New(c.providerURL, token, rs.Options{Timeout: c.rsTimeout})
	if err != nil {
		return nil, nil, fail(ExitUsage, "%v", err)
	}
	a := pdpp.New(pdpp.Config{RS: client, Token: token, Logger: log})
	return pdpp.NewServer(a, pdpp.ServerOptions{Name: c.serverName, Version: version(), Toolsets: sets}), client, nil
}

package pdpp

import (
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpkit"
)

// ServerOptions select what the built server exposes.
type ServerOptions struct {
	Name     string
	Version  string
	Toolsets []string // nil: every toolset
}

// NewServer builds the MCP server used by stdio and HTTP alike: the generated
// tools and resource templates over a, the catalog's instructions, and
// capabilities for tools and resources only.
func NewServer(a *Adapter, opt ServerOptions) *server.MCPServer {
	name := opt.Name
	if name == "" {
		name = mcptools.ServerName
	}
	s := server.NewMCPServer(name, opt.Version,
		server.WithInstructions(mcptools.Instructions),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithRecovery(),
		server.WithResourceRecovery(),
	)
	mcptools.Register(s, a, a, mcpkit.RegisterOptions{Toolsets: opt.Toolsets, ArgErrorResult: argErrorResult})
	return s
}

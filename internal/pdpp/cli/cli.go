package cli

import (
	"context"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
)

// Env is the process environment a command runs with.
type Env = cmdkit.Env

// Version is set at build time with -ldflags "-X .../internal/pdpp/cli.Version=v1.2.3";
// otherwise the module version from the build info is used.
var Version = ""

func version() string { return cmdkit.Version(Version) }

const usageText = `pdpp-mcp-server: read a PDPP personal-data server from MCP clients through a
grant-scoped client token (never an owner token).

Usage:
  pdpp-mcp-server [stdio] [flags]   serve MCP over stdio (what desktop clients launch)
  pdpp-mcp-server http [flags]      serve MCP over Streamable HTTP at /mcp
  pdpp-mcp-server demo [flags]      start the embedded demo RS and the MCP server together
  pdpp-mcp-server demo-rs [flags]   start only the embedded demo RS and write its client credential
  pdpp-mcp-server search QUERY      search from the terminal (same evidence cards as MCP)
  pdpp-mcp-server read-field ID FIELD
                                    read one bounded window of a field from the terminal
  pdpp-mcp-server version           print the version

Run "pdpp-mcp-server <command> --help" for the flags of a command.
Exit codes: 0 ok, 1 failure, 64 usage, 69 address in use, 77 owner token refused,
78 configuration (no or bad credential: run "pdpp connect <provider-url>").
`

var program = cmdkit.Program{
	Name:        "pdpp-mcp-server",
	Usage:       usageText,
	Version:     version,
	LogLevelEnv: "PDPP_MCP_LOG_LEVEL",
	Default:     "stdio",
	Commands: map[string]cmdkit.Command{
		"stdio":      runStdio,
		"http":       runHTTP,
		"demo":       runDemo,
		"demo-rs":    runDemoRS,
		"search":     runSearch,
		"read-field": runReadField,
	},
}

// Main runs the command line until it ends or SIGINT/SIGTERM arrives, and
// returns the exit code.
func Main(env Env) int { return program.Main(env) }

// MainContext runs the command line until it ends or ctx is cancelled.
func MainContext(ctx context.Context, env Env) int { return program.MainContext(ctx, env) }

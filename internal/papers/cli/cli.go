package cli

import (
	"context"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
)

// Env is the process environment a command runs with.
type Env = cmdkit.Env

// Version is set at build time with -ldflags "-X .../internal/papers/cli.Version=v1.2.3";
// otherwise the module version from the build info is used.
var Version = ""

func version() string { return cmdkit.Version(Version) }

const usageText = `paper-mcp-server: search and read a library of research papers (a read-only
paper snapshot: SQLite database + summary/source/translation assets) from MCP clients.

Usage:
  paper-mcp-server [stdio] --snapshot FILE (--assets DIR | --assets-base-url URL)
                                     serve MCP over stdio (what desktop clients launch)
  paper-mcp-server http --snapshot FILE (--assets DIR | --assets-base-url URL) [flags]
                                     serve MCP over Streamable HTTP at /mcp
  paper-mcp-server demo [--once] [--stdio] [--dir DIR]
                                     build a 30-paper demo snapshot and serve it
  paper-mcp-server version           print the version

Over HTTP (http, demo) /mcp is served WITHOUT a bearer unless --bearer-token
(PAPER_MCP_BEARER_TOKEN) is set: anyone who reaches the address can read the
snapshot. Set it, or keep the default loopback listen address, before exposing it.

Run "paper-mcp-server <command> --help" for the flags of a command.
Exit codes: 0 ok, 1 failure, 64 usage, 69 unavailable (address in use),
78 configuration (the snapshot or asset folder cannot be used).
`

var program = cmdkit.Program{
	Name:        "paper-mcp-server",
	Usage:       usageText,
	Version:     version,
	LogLevelEnv: "PAPER_MCP_LOG_LEVEL",
	Default:     "stdio",
	Commands: map[string]cmdkit.Command{
		"stdio": runStdio,
		"http":  runHTTP,
		"demo":  runDemo,
	},
}

// Main runs the command line until it ends or SIGINT/SIGTERM arrives, and
// returns the exit code.
func Main(env Env) int { return program.Main(env) }

// MainContext runs the command line until it ends or ctx is cancelled.
func MainContext(ctx context.Context, env Env) int { return program.MainContext(ctx, env) }

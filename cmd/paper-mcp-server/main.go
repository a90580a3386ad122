// Command paper-mcp-server serves a read-only research paper snapshot to
// MCP clients. See internal/papers/cli for the commands.
package main

import (
	"os"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/cli"
)

func main() {
	os.Exit(cli.Main(cli.Env{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}

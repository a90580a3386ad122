// Command paper-mcp-server serves a read-only research paper snapshot to
// MCP clients. See internal/papercli for the commands.
package main

import (
	"os"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papercli"
)

func main() {
	os.Exit(papercli.Main(papercli.Env{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}

// Command pdpp-mcp-server serves a PDPP resource server to MCP clients through
// a grant-scoped client token. See internal/pdpp/cli for the commands.
package main

import (
	"os"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/cli"
)

func main() {
	os.Exit(cli.Main(cli.Env{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}

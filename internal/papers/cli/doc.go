// Package cli is the command line of paper-mcp-server: it parses
// flags and environment variables into a read-only snapshot store, an
// asset loader and the paper MCP server, and serves it over stdio or over
// the shared Streamable HTTP transport; "demo" builds the fixture snapshot
// in a temporary directory and serves that.
package cli

// Package cli is the command line of pdpp-mcp-server: subcommands, flags with
// environment equivalents, credential resolution, exit codes, and the wiring of
// the adapter to the stdio and HTTP transports and to the embedded demo RS.
package cli

// Package mcpkit is the small runtime that every generated tool catalog
// shares: strict decoding of tool arguments into typed Args structs, the
// named string formats a catalog declares for id, name and path arguments
// (Format, CheckFormat), the typed argument error those structs (and the
// hand-written argument parsers of the catalogs' adapters) report, the
// reply budget a catalog declares per tool (ResultBudget), and the options
// that decide which toolsets a catalog registers and how an argument error
// is rendered as an MCP tool result.
package mcpkit

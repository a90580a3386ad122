package mcpkit

import (
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// FixedListTTLMs is the cache hint (ttlMs, protocol 2026-07-28 and later) on
// the results a serving process never changes: tools/list and
// resources/templates/list (the catalog and --toolsets are read once at
// start), resources/list (only the catalog's views, fixed at build) and
// server/discover. One hour: a client that caches that long sees a new
// catalog after a restart within the hour. resources/read keeps mcp-go's
// default of 0, since the documents it serves are the RS's data as of the
// read.
const FixedListTTLMs int64 = 3_600_000

// CacheHints returns the server options that put FixedListTTLMs on the fixed
// results (scope private, as mcp-go defaults: a list is answered under one
// caller's authorization).
func CacheHints() []server.ServerOption {
	fixed := []mcp.MCPMethod{mcp.MethodToolsList, mcp.MethodResourcesTemplatesList, mcp.MethodResourcesList, mcp.MethodServerDiscover}
	opts := make([]server.ServerOption, 0, len(fixed))
	for _, m := range fixed {
		opts = append(opts, server.WithMethodCacheHints(m, FixedListTTLMs, mcp.CacheScopePrivate))
	}
	return opts
}

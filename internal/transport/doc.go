// Package transport carries any mark3labs/mcp-go server over stdio or over a
// stateless, JSON-only Streamable HTTP endpoint at /mcp.
//
// The HTTP side is a chain of small middlewares in front of mcp-go, one rule
// each, in this order: access log, method, Origin allowlist (and CORS), body
// limit, MCP-Protocol-Version, bearer token, and a JSON-only dispatcher that
// hands each JSON-RPC message to mcp-go with a response writer that cannot
// stream, so every reply is a single application/json body and no
// Mcp-Session-Id is ever issued. The same mux serves /healthz, /readyz and the
// RFC 9728 protected-resource metadata.
//
// Nothing here knows which product it serves: tools, resources and
// instructions come from the *server.MCPServer handed in.
package transport

// Package transport carries any mark3labs/mcp-go server over stdio or over a
// stateless, JSON-only Streamable HTTP endpoint at /mcp.
//
// The HTTP side is a chain of small middlewares in front of mcp-go, one rule
// each, in this order: observation (request id and trace context, the
// client address behind trusted proxies (clientaddr.go), access log,
// metrics; see Observe), allowed Host, then for /mcp method, Origin
// allowlist (the server's own origin is always allowed) and CORS, body read
// (under its own deadline, a minimum rate and reading places shared per
// address and per network, with places of their own for tokens already
// verified, before any request slot; see bodyread.go),
// MCP-Protocol-Version, admission (a bearer with a good verdict takes a
// request slot as its verified tenant at once; any other waits for its
// check, shared by every request with the same bearer, in a fair line
// between networks first (see checkline.go); slots are shared per tenant,
// which it names for package inflight; see gate.go), and a JSON-only
// dispatcher that hands
// each JSON-RPC message to mcp-go with a response writer that cannot
// stream, so every reply is one application/json body and no
// Mcp-Session-Id is ever issued. The same mux serves /healthz, /readyz and the
// RFC 9728 protected-resource metadata. ServeHTTP bounds open connections per
// address, per network and in all before any request is read (connlimit.go),
// and serves the probes and metrics on an admin listener outside those
// bounds (serve.go).
//
// Each request's work is bounded by the dispatcher: a batch cap checked
// before any item runs, a reply size cap, and one deadline for the whole
// request that cancels the calls still running. A batch writes each answer
// that carries budget bytes before its next item runs (streaming the rest),
// so it never waits for bytes while holding bytes, and streams as well once
// its gathered answers would pass BatchHeldBytes. ServeHTTP derives its write
// timeout and shutdown grace from that deadline, so calls in flight are
// answered before a connection or the process is cut.
//
// The stdio side reads newline-delimited JSON-RPC itself (stdio.go): each
// line is bounded before it is held, read once to tell requests from the
// rest, and handed to mcp-go's HandleMessage; requests run on a bounded
// pool of goroutines that are reused most-recent-first, and EOF waits for
// the answers owed.
//
// RequestGuard, a server option, refuses over-long resource URIs and tool
// names before mcp-go does any work on them, over both transports.
// Every reply, over HTTP and stdio, is written with the values its calls
// returned by reference (package splice) in place: a large pass-through
// JSON value is held once and never re-encoded by the MCP library.
//
// Nothing here knows which product it serves: tools, resources and
// instructions come from the *server.MCPServer handed in.
package transport

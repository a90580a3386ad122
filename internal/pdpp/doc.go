// Package pdpp implements the PDPP tools and resources: each handler checks its
// typed arguments, makes the RS call(s) with the caller's scoped token through
// internal/pdpp/rs, and renders the answer through internal/pdpp/evidence. It also builds
// the MCP server (one builder for stdio and HTTP) from the generated surface.
package pdpp

// Package tokencheck establishes what the resource server says about a
// bearer before any data-bearing request is made with it: a grant-scoped
// client token, an owner token, a token the RS rejects (HTTP 401), or
// unavailable when the check could not complete. It reads
// GET /v1/schema?view=compact (or the plain /v1/schema when the RS refuses
// the compact view) and fails closed: only a "client" verdict lets a call
// through. Verdicts are cached per sha256 of the token, bounded in size and
// age; concurrent first checks of one token share one RS read.
package tokencheck

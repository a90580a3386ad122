// Package tokencheck establishes what the resource server says about a
// bearer before any data-bearing request is made with it: a grant-scoped
// client token, an owner token, a token the RS rejects (a token-level code,
// see rs.ClassToken), a token unusable here (the RS refuses it its own
// schema: a package token, a 403), or unavailable when the check could not
// complete. It reads GET /v1/schema?view=compact (or the plain /v1/schema
// when the RS refuses the compact view) and fails closed: only a "client"
// verdict lets a call through. Verdicts are cached per sha256 of the token,
// bounded in size and age (a rejection only for a listed token-level code:
// briefly on a first one, longer once the RS repeats it or says the grant
// ended, briefly again right after RS trouble); concurrent first checks of
// one token share one RS read, and the checks that need an RS read are
// limited per client address (WithClientAddr). Observe is told of later
// refusals and evicts the token's verdicts on a token-level one.
package tokencheck

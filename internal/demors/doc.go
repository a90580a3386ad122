// Package demors is the embedded demo PDPP resource server: a real HTTP server, served
// through the strict server interface generated from spec/pdpp-rs.openapi.yaml, that answers
// the RS endpoints the adapter consumes with the same envelopes as the reference RS, over a
// seeded SQLite database (package store), so the adapter can be demonstrated and tested end
// to end without an external provider.
//
// Three bearer tokens exist, one per grant: "client" reads every stream of the three
// connections; "narrow" reads only stream transcripts of cin_demo_loom_main, fields id,
// language, text and created_at; "owner" is an owner token (GET /v1/schema reports
// bearer.token_kind "owner") that the RS answers but the adapter must refuse.
//
// With Config.OAuth the same handler also serves the demo authorization server (package
// demoas), which its protected-resource metadata names, and the RS accepts the tokens it
// issues with the reference RS's answers: a client grant reads its one source, a package
// token gets 404 "Unknown source: unknown" on every /v1 route, and an expired or revoked
// grant gets 403 grant_expired or grant_revoked.
package demors

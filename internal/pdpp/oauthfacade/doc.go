// Package oauthfacade is the opt-in authorization facade of the hosted PDPP server
// (--oauth-source): it lets an OAuth client that knows nothing of PDPP obtain a
// single-source client grant from the provider's authorization server.
//
// With it, the server's protected-resource metadata names the server itself as the
// authorization server, and the server answers:
//
//   - /.well-known/oauth-authorization-server and /.well-known/openid-configuration with
//     the provider's own RFC 8414 metadata (fetched one at a time with a timeout and a
//     size bound, cached for a lifetime, the last good copy served while a refresh fails,
//     a failure remembered from when it ends: see docache), in which only issuer and
//     authorization_endpoint name this server; registration, token, PAR and
//     introspection endpoints stay the provider's, so no code or token ever passes
//     through here;
//   - /oauth/authorize with a 302 to the provider's authorization endpoint (taken from
//     that metadata, never from the request), carrying the request's query unchanged plus
//     connector_id=<source> unless the client already named what it asks for
//     (connector_id, PDPP authorization_details, or a pushed request_uri).
//
// At most Config.MaxConcurrent requests are served at once; one more is answered 503.
//
// The added connector_id only narrows what the person is asked to share (one source
// instead of the provider's multi-source picker); the person still consents at the
// provider, which alone issues the grant.
package oauthfacade

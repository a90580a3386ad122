// Package demoas is the demo's OAuth authorization server: it issues the grants the
// embedded demo resource server (package demors) accepts, so an OAuth client that knows
// nothing but an MCP URL can be run end to end on one machine.
//
// It shows the observable behaviour of the PDPP reference authorization server:
//
//   - RFC 8414 metadata at /.well-known/oauth-authorization-server (no scopes_supported);
//   - dynamic client registration (RFC 7591) at /oauth/register for public clients only:
//     token_endpoint_auth_method "none" is accepted, client_secret_post and
//     client_secret_basic are refused, and so is a non-empty scope (there are no
//     scopes; an empty one, as MCP Inspector sends, is accepted); members it does
//     not use are ignored;
//   - Client ID Metadata Documents: an https client_id is the URL of the client's
//     JSON metadata, fetched from a public host only (the webhook address rules of internal/mcpserver/publichost),
//     at most MaxDocumentBytes within DocumentTimeout, without redirects, and
//     kept DocumentTTL (at most MaxDocuments), at most two fetches at once per
//     client address and 32 in all; errors never name what a host resolved to;
//     Config.AllowLoopbackDocuments (the demo commands' --demo-allow-loopback-cimd)
//     lets a document be fetched from this machine, and Config.DocumentClient
//     lets a test serve one from loopback;
//   - the authorization code grant at /oauth/authorize with PKCE, S256 only, a consent
//     page (or, with Config.AutoConsent, approval at once), and the token endpoint at
//     /oauth/token;
//   - connector_id or PDPP authorization_details naming one source lead to a client
//     grant (grant_id in the token response); neither leads to a package grant over the
//     sources the person picks (grant_package_id);
//   - access tokens that live Config.AccessTokenTTL (600 s by default), refresh tokens
//     that rotate on every use, and a replayed refresh token (or authorization code)
//     revoking the whole grant.
//
// Tables are bounded in all and per client address; an address's flood drops only
// its own entries, and live grants are never dropped for a newcomer (503 instead).
// Before consent, errors are redirected only to a loopback redirect URI or one a
// person confirmed; otherwise they are shown on the server's own page.
//
// The resource server asks Lookup what an access token is worth: a grant with its kind
// and sources, and whether it is active, expired or revoked. Everything is held in
// memory, each table with a stated bound, and every token, code and refresh token is
// random (crypto/rand) and kept only as its SHA-256.
package demoas

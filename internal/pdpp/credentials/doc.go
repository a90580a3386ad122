// Package credentials reads and writes the local PDPP credential cache:
// one JSON file per provider at <cache-root>/clients/<host>.json, written by
// `pdpp connect` and read by the stdio server to obtain its grant-scoped
// client token.
//
// Loading fails closed with a typed *Error: a missing file is
// not_connected, an unreadable or incomplete file is credential_invalid, a
// past expires_at is credential_expired, and a file marked as holding an
// owner token is owner_token_refused. Every message names the fix,
// `pdpp connect <provider-url>`, and every error carries a process exit
// code (78 for configuration problems, 77 for a refused owner token).
package credentials

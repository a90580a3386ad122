// Package rs is the adapter's only door to the PDPP resource server: it attaches
// the caller's scoped bearer token to each request, enforces timeouts and a cap on
// response bodies, and turns every failure into one error shape — the RS's own
// error envelope, kept verbatim, or an adapter error of the same form when the RS
// could not be reached or answered something unreadable. Bodies are read under
// the process-wide bound on bytes in flight (package inflight), reserved
// before they are allocated, and a call may lower its own body limit
// (WithBodyLimit). It never retries with other credentials and never logs
// tokens. It also holds the one list of what RS error codes mean for the
// bearer (Class: the token is no good, one read is out of scope, the token is
// unusable here, the RS is unavailable), which every refusal decision of the
// server follows.
package rs

package rs

import (
	"net/http"
	"slices"
)

// Class is what a failed RS request says about the bearer that made it. It
// is the one place that reads RS error codes for that purpose: the token
// check's verdicts, the HTTP answers (401 with a challenge, an explained 403,
// 503 with Retry-After), the tool errors, and which cached verdicts are kept
// or evicted all follow it. The code decides, never the status alone: the
// reference RS answers 401 both for a dead token and for a read outside a
// live grant.
type Class int

const (
	// ClassRequest: the refusal concerns this one request (a bad argument,
	// an unknown record, a conflict); the token is fine.
	ClassRequest Class = iota
	// ClassToken: the token itself is no good, whatever it asks for
	// (inactive, unknown, expired, revoked, or a grant the RS cannot
	// resolve); the client must renew it.
	ClassToken
	// ClassScope: a live grant refuses this one read (a stream,
	// connection or field outside it); the token is fine.
	ClassScope
	// ClassUnusable: the token will never read through this server (a
	// multi-source package token, a grant whose own schema is refused).
	// Only CheckClassOf answers it.
	ClassUnusable
	// ClassUnavailable: the RS, or the authorization server behind it,
	// could not answer now (5xx, 408, 429, timeout, network).
	ClassUnavailable
)

var classNames = [...]string{ClassRequest: "request", ClassToken: "token", ClassScope: "scope", ClassUnusable: "unusable", ClassUnavailable: "unavailable"}

func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return "request"
	}
	return classNames[c]
}

// Adapter codes of failures in which the RS gave no answer.
const (
	CodeTimeout     = "rs_timeout"
	CodeUnreachable = "rs_unreachable"
	// CodeInvalidToken is the code given to an RS 401 that carries no JSON
	// error envelope: RFC 6750's invalid_token, the only thing such an
	// answer can mean.
	CodeInvalidToken = "invalid_token"
)

// tokenCodes mean the token itself is no good. Sources: the real RS
// samples (context.active_false, authentication_error), the reference RS's
// introspection failure codes (context.*: every one of these fails every
// request made with the token) and its error table (grant_*: 403 for a
// grant that ended).
var tokenCodes = []string{
	"authentication_error", // 401, no bearer the RS could read
	CodeInvalidToken,       // 401 without an envelope (RFC 6750)
	"context.active_false", // 401, the introspected token is not active
	"context.audience_mismatch",
	"context.cache_stale",
	"context.expired",
	"context.grant_mismatch",
	"context.identity_mismatch",
	"context.issuer_mismatch",
	"context.kind_mismatch",
	"context.rights_duplicated",
	"context.rights_missing",
	"context.source_mismatch",
	"grant_consumed", // 403, a single-use grant already used
	"grant_expired",  // 403
	"grant_invalid",  // 403
	"grant_revoked",  // 403
}

// scopeCodes refuse one read inside a live grant. Sources: the real RS
// samples (context.stream_not_allowed, context.instance_mismatch, both
// 401), the reference RS's introspection codes and its error table (403).
var scopeCodes = []string{
	"context.field_mismatch",
	"context.field_not_granted",
	"context.instance_mismatch",  // 401, a connection outside the grant
	"context.stream_not_allowed", // 401, a stream outside the grant
	"field_not_granted",
	"grant_stream_not_allowed",
	"insufficient_scope",
}

// unavailableCodes mean nobody could say anything about the token now:
// the RS's own introspection call to its authorization server failed
// (context.authentication_failed), or the RS did not answer.
var unavailableCodes = []string{
	"context.authentication_failed",
	CodeTimeout,
	CodeUnreachable,
}

// classCodes are the codes listed for each class that codes name.
var classCodes = map[Class][]string{ClassToken: tokenCodes, ClassScope: scopeCodes, ClassUnavailable: unavailableCodes}

// Codes returns the codes listed for c (ClassToken, ClassScope or
// ClassUnavailable), sorted; nil for the other classes, which no code names.
func Codes(c Class) []string { return slices.Sorted(slices.Values(classCodes[c])) }

// TokenCode reports whether code is listed as meaning the token itself is
// no good. Only such a rejection is remembered by the token check.
func TokenCode(code string) bool { return slices.Contains(tokenCodes, code) }

// ClassOf classifies a failed request made with a token already accepted
// (any tool call or resource read): by its code first, then RS trouble by
// status; everything else is about the request.
func ClassOf(e *Error) Class {
	code := e.Code()
	switch {
	case TokenCode(code):
		return ClassToken
	case slices.Contains(scopeCodes, code):
		return ClassScope
	case slices.Contains(unavailableCodes, code):
		return ClassUnavailable
	case e.Status >= 500, e.Status == http.StatusRequestTimeout, e.Status == http.StatusTooManyRequests:
		return ClassUnavailable
	}
	return ClassRequest
}

// CheckClassOf classifies the failure of the token check's schema read
// (GET /v1/schema, which names no stream or connection, after the plain
// fallback when the compact view was refused). It answers ClassToken,
// ClassUnusable or ClassUnavailable:
//   - a listed token code, or a 401 whose code no list names: ClassToken
//     (only the listed ones are remembered);
//   - no RS refusal at all (no answer, or an unreadable 2xx) and RS
//     trouble: ClassUnavailable;
//   - any other refusal, 4xx or a scope code: ClassUnusable, for the RS
//     refuses the grant its own schema, e.g. a package token's
//     404 not_found "Unknown source: unknown".
func CheckClassOf(e *Error) Class {
	switch c := ClassOf(e); {
	case c == ClassToken, c == ClassUnavailable:
		return c
	case e.Status < 400:
		return ClassUnavailable
	case e.Status == http.StatusUnauthorized && c == ClassRequest:
		return ClassToken
	}
	return ClassUnusable
}

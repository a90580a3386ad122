package transport

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
)

type bearerKey struct{}

// WithBearer returns a context carrying the client's bearer token. The HTTP
// stack sets it for exactly one request; a stdio runner may set it once on
// the context handed to ServeStdio.
func WithBearer(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, bearerKey{}, token)
}

// BearerFromContext returns the bearer token of the request being served.
// Tool handlers use it to call the resource server with the same token; it
// must never be logged or kept beyond the call.
func BearerFromContext(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(bearerKey{}).(string)
	return t, ok && t != ""
}

// maxTokenBytes bounds an accepted token; longer values are malformed.
const maxTokenBytes = 8 << 10

var (
	errNoBearer        = errors.New("missing bearer token")
	errMalformedBearer = errors.New("malformed Authorization header: expected a single \"Bearer <token>\"")
)

// parseBearer extracts the token from the Authorization header(s) of a
// request, following RFC 6750 section 2.1 (case-insensitive scheme, b64token
// syntax).
func parseBearer(h http.Header) (string, error) {
	values := h.Values("Authorization")
	switch len(values) {
	case 0:
		return "", errNoBearer
	case 1:
	default:
		return "", errMalformedBearer
	}
	v := values[0]
	if strings.TrimSpace(v) == "" {
		return "", errNoBearer
	}
	scheme, rest, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", errMalformedBearer
	}
	token := strings.TrimLeft(rest, " ")
	if !isB64Token(token) {
		return "", errMalformedBearer
	}
	return token, nil
}

// isB64Token checks b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" /
// "+" / "/" ) *"=".
func isB64Token(s string) bool {
	if s == "" || len(s) > maxTokenBytes {
		return false
	}
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// challenge answers a request whose Authorization header is missing or
// malformed (err, from parseBearer) under RequireBearer: 401, a
// WWW-Authenticate challenge naming the protected-resource metadata, and
// the same URL in a JSON-RPC error body.
func (st *settings) challenge(w http.ResponseWriter, r *http.Request, err error) {
	metadata := st.metadataURL(r)
	challenge := `Bearer resource_metadata="` + quoteParam(metadata) + `"`
	reason := "missing_token"
	if errors.Is(err, errMalformedBearer) {
		challenge += `, error="invalid_request", error_description="malformed Authorization header"`
		reason = "malformed_token"
	}
	writeUnauthorized(w, requestID(r), challenge,
		"authorization required: send Authorization: Bearer <client token>",
		map[string]string{"reason": reason, "resource_metadata": metadata})
}

// AuthOutcome is how the hosted transport answers a bearer.
type AuthOutcome int

const (
	// AuthAccept serves the request.
	AuthAccept AuthOutcome = iota
	// AuthInvalidToken answers 401 with an invalid_token challenge: the
	// token is not (or no longer) accepted; the client must refresh or
	// re-authorize.
	AuthInvalidToken
	// AuthForbidden answers 403 with Message: this server refuses the
	// token for good (an owner token, or one the RS will never let read
	// here, such as a multi-source package token).
	AuthForbidden
	// AuthUnavailable answers 503 with Retry-After: the token could not be
	// checked now.
	AuthUnavailable
)

// AuthVerdict is what HTTPConfig.Authenticate decides for one bearer.
type AuthVerdict struct {
	Outcome AuthOutcome
	// Reason is a short code put in the error's data (e.g.
	// owner_token_refused); Message is the error message shown to the
	// client. Both are for AuthForbidden and AuthUnavailable.
	Reason, Message string
	// Data are further members of the error's data beside reason (e.g.
	// the RS status and code behind a refusal); optional, small.
	Data map[string]any
	// Tenant names the verified identity of an accepted bearer, as
	// HTTPConfig.Verified does (e.g. its grant id); empty: a hash of the
	// token.
	Tenant string
}

// data is the error data of a refusal: Data with reason set to Reason.
func (v AuthVerdict) data() map[string]any {
	out := make(map[string]any, len(v.Data)+1)
	maps.Copy(out, v.Data)
	out["reason"] = v.Reason
	return out
}

// authRetryAfter is the Retry-After of a 503 for an unavailable token check.
const authRetryAfter = "5"

// codeUnavailable is the JSON-RPC code of a 503 for an unavailable check.
const codeUnavailable = -32000

func (st *settings) refuse(w http.ResponseWriter, r *http.Request, v AuthVerdict) {
	switch v.Outcome {
	case AuthInvalidToken:
		st.refuseInvalidToken(w, r)
	case AuthForbidden:
		// A 403 carries no challenge for the access log's observer to read
		// a reason from, so it is counted here.
		st.Metrics.AuthRefused(cmp.Or(v.Reason, "forbidden"))
		writeRPCError(w, http.StatusForbidden, requestID(r), codeUnauthorized, v.Message, v.data())
	default:
		st.Metrics.AuthRefused(cmp.Or(v.Reason, "token_check_unavailable"))
		w.Header().Set("Retry-After", authRetryAfter)
		writeRPCError(w, http.StatusServiceUnavailable, requestID(r), codeUnavailable, v.Message, v.data())
	}
}

// refuseInvalidToken answers 401 with an RFC 6750 invalid_token challenge
// that names the protected-resource metadata.
func (st *settings) refuseInvalidToken(w http.ResponseWriter, r *http.Request) {
	metadata := st.metadataURL(r)
	writeUnauthorized(w, requestID(r),
		`Bearer error="invalid_token", error_description="the token is not accepted by the resource server", resource_metadata="`+quoteParam(metadata)+`"`,
		"the bearer token was not accepted (expired, revoked or unknown): refresh it or authorize again",
		map[string]string{"reason": "invalid_token", "resource_metadata": metadata})
}

// Unauthorized answers 401 the way the bearer middleware does, for a server
// that checks a bearer of its own in front of the /mcp handler: challenge
// as the WWW-Authenticate header and a JSON-RPC error body with id null,
// code -32001, message and data {"reason": reason}.
func Unauthorized(w http.ResponseWriter, challenge, message, reason string) {
	writeUnauthorized(w, nil, challenge, message, map[string]string{"reason": reason})
}

// writeUnauthorized answers 401 with challenge and a JSON-RPC error body
// (code -32001) for request id.
func writeUnauthorized(w http.ResponseWriter, id json.RawMessage, challenge, message string, data any) {
	w.Header().Set("WWW-Authenticate", challenge)
	writeRPCError(w, http.StatusUnauthorized, id, codeUnauthorized, message, data)
}

// rejectSignal is set when the RS refuses the bearer itself during a
// request whose bearer had been accepted; the dispatcher then answers 401
// instead of its reply (a batch that already answered an item keeps its
// answers: see serveBatch).
type rejectSignal struct{ set atomic.Bool }

type rejectKey struct{}

// MarkTokenRejected records that the RS refused the bearer of the hosted
// request ctx belongs to (a token-level refusal met during a call: the
// token is inactive, expired or revoked; never a scope refusal). The reply
// to that request becomes HTTP 401 with an invalid_token challenge. Outside
// a hosted request with an Authenticate hook it does nothing.
func MarkTokenRejected(ctx context.Context) {
	if s, ok := ctx.Value(rejectKey{}).(*rejectSignal); ok {
		s.set.Store(true)
	}
}

// tokenRejected reports whether MarkTokenRejected was called for r.
func tokenRejected(r *http.Request) bool {
	s, ok := r.Context().Value(rejectKey{}).(*rejectSignal)
	return ok && s.set.Load()
}

// codeUnauthorized is the server-defined JSON-RPC code used in 401 bodies.
const codeUnauthorized = -32001

// quoteParam escapes a value for an HTTP quoted-string.
func quoteParam(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

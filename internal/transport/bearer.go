package transport

import (
	"context"
	"errors"
	"net/http"
	"strings"
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

// bearerMiddleware puts the request's bearer token into its context. With
// RequireBearer, a missing or malformed header is answered with 401, a
// WWW-Authenticate challenge naming the protected-resource metadata, and
// the same URL in a JSON-RPC error body.
func (st *settings) bearerMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, err := parseBearer(r.Header)
		if err == nil {
			next.ServeHTTP(w, r.WithContext(WithBearer(r.Context(), token)))
			return
		}
		if !st.RequireBearer {
			next.ServeHTTP(w, r)
			return
		}
		metadata := st.metadataURL(r)
		challenge := `Bearer resource_metadata="` + quoteParam(metadata) + `"`
		reason := "missing_token"
		if errors.Is(err, errMalformedBearer) {
			challenge += `, error="invalid_request", error_description="malformed Authorization header"`
			reason = "malformed_token"
		}
		w.Header().Set("WWW-Authenticate", challenge)
		writeRPCError(w, http.StatusUnauthorized, requestID(r), codeUnauthorized,
			"authorization required: send Authorization: Bearer <client token>",
			map[string]string{"reason": reason, "resource_metadata": metadata})
	})
}

// codeUnauthorized is the server-defined JSON-RPC code used in 401 bodies.
const codeUnauthorized = -32001

// quoteParam escapes a value for an HTTP quoted-string.
func quoteParam(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}
